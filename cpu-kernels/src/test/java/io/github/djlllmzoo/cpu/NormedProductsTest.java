package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A decode step's norm computed into the input of the products that follow it ({@link
 * CpuKernels#normedProjectAll}, {@link CpuKernels#normedGatedProject}) is the norm kernel's own result
 * read by the same product kernels, so the outputs are the norm's array then the products, bit for
 * bit, in every weight format and with the switch off; with it on, no array is made for the normed
 * input (the outputs are the only arrays the call adds).
 */
class NormedProductsTest extends ManagedArraysTest {

    private final CpuKernels kernels = new CpuKernels(true, true);

    @BeforeEach
    void kernelsBuiltAndLoadedWhereTheCpuHasAvx512() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    private static CpuKernels withoutNormedProducts() {
        System.setProperty(KernelSwitches.PROPERTY, DecodeOps.NORMED_PRODUCTS_SWITCH);
        try {
            return new CpuKernels(true, true);
        } finally {
            System.clearProperty(KernelSwitches.PROPERTY);
        }
    }

    /** A projection of a realistic scale (std 0.02), compressed to {@code format} unless FLOAT32. */
    private ProjectionWeight projection(int out, int in, String format) {
        ProjectionWeight weight = Projections.of(Layout.OUT_IN,
                manager.randomNormal(0, 0.02f, new Shape(out, in), DataType.FLOAT32), null);
        if (!format.equals("FLOAT32")) {
            weight.compress(WeightFormat.valueOf(format));
        }
        return weight;
    }

    /**
     * q, k and v as heads of 64 (B, H, 1, D), as a decode step asks for them, or as rows (B, 1, out):
     * with the switch on compressed weights' products are made in that shape (no reshape), float32
     * ones are reshaped after the norm's array and the few-row kernel.
     */
    @ParameterizedTest(name = "{0} rows={1} 1+w={2} heads={3}")
    @CsvSource({
        "INT8, 1, false, true", "INT8, 8, true, true", "INT8, 2, false, false", "BFLOAT16, 1, false, true",
        "FLOAT16, 3, false, true", "FLOAT32, 1, false, true",
    })
    void queryKeyAndValueOfTheNormedInputEqualTheNormThenTheProductsBitForBit(
            String format, int rows, boolean unitOffset, boolean heads) {
        ProjectionWeight[] qkv = {projection(384, 256, format), projection(128, 256, format), projection(128, 256, format)};
        Shape[] shapes = heads
                ? new Shape[] {new Shape(rows, 6, 1, 64), new Shape(rows, 2, 1, 64), new Shape(rows, 2, 1, 64)}
                : new Shape[] {new Shape(rows, 1, 384), new Shape(rows, 1, 128), new Shape(rows, 1, 128)};
        NDArray x = manager.randomNormal(new Shape(rows, 1, 256)).muli(3); // the residual stream (B, 1, E)
        NDArray scale = manager.randomNormal(new Shape(256));
        NDArray[] separate = kernels.projectAll(kernels.rmsNorm(x, scale, 1e-6f, unitOffset, false), qkv, null, false);
        int[] madeArrays = new int[2];
        CpuKernels[] both = {kernels, withoutNormedProducts()};
        for (int k = 0; k < 2; k++) {
            CpuKernels each = both[k];
            int before = manager.getManagedArrays().size();
            NDArray[] normed = each.normedProjectAll(x, scale, 1e-6f, unitOffset, qkv, shapes, null, false);
            madeArrays[k] = manager.getManagedArrays().size() - before;
            assertEquals(3, normed.length);
            for (int i = 0; i < 3; i++) {
                assertEquals(shapes[i], normed[i].getShape());
                assertArrayEquals(separate[i].toFloatArray(), normed[i].toFloatArray(), 0f, each + ": product " + i);
            }
        }
        int reshapes = heads ? 3 : 0;
        assertEquals(format.equals("FLOAT32") ? 4 + reshapes : 3, madeArrays[0],
                "compressed: the three products in their shapes; float32: the norm's array, products, reshapes");
        assertEquals(4 + reshapes, madeArrays[1], "switched off: the norm's array, the products and their reshapes");
    }

    @ParameterizedTest(name = "{0} rows={1} {2}")
    @CsvSource({
        "INT8, 1, SILU", "INT8, 6, GELU_TANH", "BFLOAT16, 1, SILU", "FLOAT16, 2, SILU", "FLOAT32, 1, SILU",
        "FLOAT32, 8, GELU_TANH",
    })
    void theGatedProductOfTheNormedInputEqualsTheNormThenTheProductBitForBit(
            String format, int rows, HiddenActivation activation) {
        ProjectionWeight gate = projection(1000, 256, format);
        ProjectionWeight up = projection(1000, 256, format);
        NDArray x = manager.randomNormal(new Shape(rows, 1, 256)).muli(3);
        NDArray scale = manager.randomNormal(new Shape(256));
        float[] separate = kernels.gatedProject(kernels.rmsNorm(x, scale, 1e-5f, false, false), gate, up, activation,
                null, false).toFloatArray();
        float[] residual = x.toFloatArray();
        CpuKernels[] both = {kernels, withoutNormedProducts()};
        for (int k = 0; k < 2; k++) {
            int before = manager.getManagedArrays().size();
            NDArray normed = both[k].normedGatedProject(x, scale, 1e-5f, false, gate, up, activation, null, false);
            assertEquals(k == 0 ? 1 : 2, manager.getManagedArrays().size() - before,
                    both[k] + ": the product's array, and switched off the norm's");
            assertEquals(new Shape(rows, 1, 1000), normed.getShape());
            assertArrayEquals(separate, normed.toFloatArray(), 0f, both[k].toString());
        }
        assertArrayEquals(residual, x.toFloatArray(), 0f, "the residual stream is only read");
        assertTrue(kernels.toString().contains("normed products on"), kernels.toString());
    }
}
