package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.WeightFormat;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CompressedProductTest extends ManagedArraysTest {

    @BeforeEach
    void kernelBuiltAndLoadedWhereTheCpuHasAvx512() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    private CompressedWeight compressed(int out, int in, WeightFormat format) {
        float[] w = manager.randomNormal(0, 0.02f, new Shape(out, in), DataType.FLOAT32).toFloatArray();
        return CompressedWeight.compress(w, out, in, format);
    }

    /**
     * The kernel's product equals the engine's product of the weight widened to float32 (what the
     * reference path computes) to float32 rounding of the sums: the widening is exact in both.
     */
    @ParameterizedTest
    @CsvSource({
        "INT8, 1, 768, 1000", "INT8, 2, 64, 3", "INT8, 5, 96, 301", "INT8, 8, 2048, 512",
        "BFLOAT16, 1, 768, 1000", "BFLOAT16, 3, 64, 3", "BFLOAT16, 8, 96, 301",
        "FLOAT16, 1, 768, 1000", "FLOAT16, 4, 64, 3", "FLOAT16, 8, 96, 301"
    })
    void theKernelEqualsTheEnginesProductOfTheWidenedWeight(WeightFormat format, int rows, int in, int out) {
        CompressedWeight weight = compressed(out, in, format);
        NDArray widened = weight.toFloat32(manager); // (out, in)
        NDArray bias = manager.randomNormal(new Shape(out));
        NDArray x = manager.randomNormal(new Shape(rows, 1, in)); // a decode step: (B, 1, in)
        for (NDArray b : new NDArray[] {bias, null}) {
            assertTrue(CompressedProduct.applies(x, weight, b, rows));
            NDArray actual = CompressedProduct.multiply(x, weight, b, rows);
            assertEquals(new Shape(rows, 1, out), actual.getShape());
            float[] expected = x.getNDArrayInternal().linear(x, widened, b).singletonOrThrow().toFloatArray();
            assertArrayEquals(expected, actual.toFloatArray(), RoundingBound.ofProduct(x, widened, b, true),
                    format + " bias " + (b != null));
        }
    }

    /** A prefill's weight, widened natively, holds exactly the values the reference widens to. */
    @ParameterizedTest
    @CsvSource({"INT8, 64, 3", "INT8, 768, 1001", "BFLOAT16, 96, 301", "FLOAT16, 2048, 5"})
    void theNativeWideningIsTheReferencesExactly(WeightFormat format, int in, int out) {
        CompressedWeight weight = compressed(out, in, format);
        assertTrue(CompressedProduct.widens(weight));
        NDArray widened = CompressedProduct.widened(weight, manager);
        assertEquals(new Shape(out, in), widened.getShape());
        assertArrayEquals(weight.toFloatArray(), widened.toFloatArray(), format.toString());
    }

    @Test
    void widthsOutsideWholeGroupsRowCountsPastEightAndViewsAreLeftToTheEngine() {
        CompressedWeight weight = compressed(40, 64, WeightFormat.INT8);
        NDArray x = manager.randomNormal(new Shape(8, 64));
        assertTrue(CompressedProduct.applies(x, weight, null, 8));
        assertFalse(CompressedProduct.applies(manager.randomNormal(new Shape(9, 64)), weight, null, 9), "9 rows");
        assertFalse(CompressedProduct.applies(manager.randomNormal(new Shape(64, 8)).transpose(), weight, null, 8),
                "a transposed view");
        assertFalse(CompressedProduct.applies(x, weight, manager.randomNormal(new Shape(39)), 8), "bias size");
        assertFalse(CompressedProduct.applies(x.toType(DataType.FLOAT64, false), weight, null, 8), "float64");
        CompressedWeight ragged = compressed(40, 48, WeightFormat.BFLOAT16);
        assertFalse(CompressedProduct.applies(manager.randomNormal(new Shape(1, 48)), ragged, null, 1),
                "48 inputs: not whole groups of 32");
        assertFalse(CompressedProduct.widens(ragged), "48 inputs: widened by the reference");
    }
}
