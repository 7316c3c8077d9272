package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * An int8, int4 or q4_k decode product whose input is quantized once for the hand-over ({@link
 * CompressedProduct#prepare}) rather than by every core's call: the same quantization read by the
 * same kernel, so every product is bit for bit the one each call computes quantizing x itself, however
 * the columns are shared out (the last runs to whichever core is free).
 */
class PreparedInputTest extends CompressedWeightsTest {

    /** The dot-product bits the products use, where they include the int8 one with a prepared form. */
    private static int preparedDots() {
        int dots = CompressedProduct.dotProducts();
        assumeTrue((dots & CompressedProduct.VNNI) != 0, "no int8 dot product: nothing is prepared");
        return dots;
    }

    /** A projection of a realistic scale (std 0.02) held as {@code format}. */
    private ProjectionWeight projection(int out, int in, WeightFormat format) {
        ProjectionWeight weight = Projections.of(
                Layout.OUT_IN, manager.randomNormal(0, 0.02f, new Shape(out, in), DataType.FLOAT32), null);
        weight.compress(format);
        return weight;
    }

    /**
     * Products of one to eight rows over whole and ragged blocks of 256 inputs (Qwen2.5-0.5B's 896),
     * a tiled input (4128; for q4_k, 8 rows of a down projection's 5632 read in chunks) and weights
     * over and under the size that is split across the cores.
     */
    @ParameterizedTest(name = "{0} rows={1} in={2}")
    @CsvSource({
        "INT4, 1, 2048", "INT4, 1, 896", "INT4, 3, 896", "INT4, 8, 2048", "INT4, 7, 4128",
        "INT6, 1, 2048", "INT6, 1, 896", "INT6, 4, 896", "INT6, 8, 4128",
        "INT8, 1, 2048", "INT8, 1, 896", "INT8, 5, 768", "INT8, 8, 4128",
        "Q4_K, 1, 2048", "Q4_K, 3, 896", "Q4_K, 8, 5632", "Q4_K, 6, 4128"
    })
    void aPreparedInputGivesEachCallsOwnProductBitForBit(WeightFormat format, int rows, int in) {
        int dots = preparedDots();
        CompressedWeight large = compressed(1000, in, format); // uneven runs
        CompressedWeight small = compressed(33, in, format);
        NDArray bias = manager.randomNormal(new Shape(33));
        NDArray x = manager.randomNormal(new Shape(rows, 1, in));
        CompressedWeight[] weights = {large, small};
        NDArray[] biases = {null, bias};
        long before = CompressedProduct.preparedForms();
        NDArray[] prepared = CompressedProduct.multiplyAll(
                x, NativeKernels.buffer(x), weights, biases, null, rows, dots, true);
        assertEquals(before + 1, CompressedProduct.preparedForms(), "one form for both products");
        NDArray[] own = CompressedProduct.multiplyAll(x, NativeKernels.buffer(x), weights, biases, null, rows, dots,
                false);
        assertEquals(before + 1, CompressedProduct.preparedForms(), "none without");
        for (int i = 0; i < weights.length; i++) {
            assertEquals(own[i].getShape(), prepared[i].getShape());
            assertArrayEquals(own[i].toFloatArray(), prepared[i].toFloatArray(), 0f, "weight " + i);
        }
    }

    /** Only products of one int8, int4 or q4_k format and one input width by the int8 dot product have a form. */
    @Test
    void mixedFormatsOrWidthsAndTheWideningKernelHaveNoPreparedForm() {
        int dots = preparedDots();
        NDArray x = manager.randomNormal(new Shape(1, 1, 256));
        CompressedWeight int4 = compressed(64, 256, WeightFormat.INT4);
        CompressedWeight int8 = compressed(64, 256, WeightFormat.INT8);
        CompressedWeight wider = compressed(64, 512, WeightFormat.INT4);
        CompressedWeight half = compressed(64, 256, WeightFormat.BFLOAT16);
        CompressedWeight q4k = compressed(64, 256, WeightFormat.Q4_K);
        assertNotNull(CompressedProduct.prepare(NativeKernels.buffer(x), new CompressedWeight[] {int4, int4}, 1, dots));
        assertNotNull(CompressedProduct.prepare(NativeKernels.buffer(x), new CompressedWeight[] {q4k, q4k}, 1, dots));
        assertNull(CompressedProduct.prepare(NativeKernels.buffer(x), new CompressedWeight[] {q4k, int4}, 1, dots));
        assertNull(CompressedProduct.prepare(NativeKernels.buffer(x), new CompressedWeight[] {int4, int8}, 1, dots));
        assertNull(CompressedProduct.prepare(NativeKernels.buffer(x), new CompressedWeight[] {int4, wider}, 1, dots));
        assertNull(CompressedProduct.prepare(NativeKernels.buffer(x), new CompressedWeight[] {half}, 1, dots));
        assertNull(CompressedProduct.prepare(NativeKernels.buffer(x), new CompressedWeight[] {int8}, 1, 0),
                "the widening kernel");
    }

    /**
     * The CPU kernels prepare a decode step's int4 or q4_k input for its q/k/v products, its gated MLP
     * and its products added into the residual, each equal bit for bit to the same kernels with {@code
     * -Dllmzoo.cpu.off=compressedProduct.prepared}, which prepares nothing.
     */
    @ParameterizedTest
    @CsvSource({"INT4", "Q4_K"})
    void theCpuKernelsPrepareTheInputUnlessSwitchedOffAndComputeTheSame(WeightFormat format) {
        preparedDots();
        int in = 512;
        ProjectionWeight q = projection(512, in, format);
        ProjectionWeight k = projection(128, in, format);
        ProjectionWeight v = projection(128, in, format);
        ProjectionWeight gate = projection(1408, in, format);
        ProjectionWeight up = projection(1408, in, format);
        ProjectionWeight down = projection(in, 1408, format);
        NDArray x = manager.randomNormal(new Shape(1, 1, in));
        NDArray inner = manager.randomNormal(new Shape(1, 1, 1408));
        CpuKernels on = new CpuKernels(true, true);
        CpuKernels off = SwitchedKernels.without(CompressedProduct.PREPARED_SWITCH);
        assertTrue(on.toString().contains("prepared input on"), on.toString());
        assertTrue(off.toString().contains("prepared input off"), off.toString());

        long before = CompressedProduct.preparedForms();
        NDArray[] qkvOff = off.projectAll(x, new ProjectionWeight[] {q, k, v}, null, false);
        NDArray gatedOff = off.gatedProject(x, gate, up, HiddenActivation.SILU, null, false);
        NDArray sumOff = off.projectAdd(inner, down, x.duplicate(), null, false);
        assertEquals(before, CompressedProduct.preparedForms(), "switched off: nothing prepared");

        NDArray[] qkvOn = on.projectAll(x, new ProjectionWeight[] {q, k, v}, null, false);
        NDArray gatedOn = on.gatedProject(x, gate, up, HiddenActivation.SILU, null, false);
        NDArray sumOn = on.projectAdd(inner, down, x.duplicate(), null, false);
        assertEquals(before + 3, CompressedProduct.preparedForms(), "one form a hand-over");
        for (int i = 0; i < 3; i++) {
            assertArrayEquals(qkvOff[i].toFloatArray(), qkvOn[i].toFloatArray(), 0f, "projection " + i);
        }
        assertArrayEquals(gatedOff.toFloatArray(), gatedOn.toFloatArray(), 0f, "gated MLP");
        assertArrayEquals(sumOff.toFloatArray(), sumOn.toFloatArray(), 0f, "down product into the residual");
    }
}
