package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.WeightFormat;
import java.util.Arrays;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The q4_k kernels ({@link KQuantProduct}, kquant_product.c) of the variant this run loads (the best
 * of the CPU, then AVX2 in the second surefire run) against the reference path's values.
 */
class KQuantProductTest extends CompressedWeightsTest {

    /**
     * A decode product is the engine's product of the widened weight with the input rounded to its
     * own int8 grid (per super-block of 256 inputs, as the kernel quantizes it: llama.cpp's Q8_K):
     * the code sums are exact integers, so only float32 rounding of the scaled sums is left; whole
     * super-blocks and a last one cut short at a multiple of 32, 1 to 8 rows.
     */
    @ParameterizedTest
    @CsvSource({"1, 256, 300", "2, 512, 3", "3, 768, 97", "4, 96, 301", "5, 2048, 64", "6, 4128, 70",
        "7, 288, 17", "8, 2048, 512", "1, 32, 7", "8, 5632, 33"})
    void theDecodeProductEqualsTheProductWithTheInputOnItsInt8Grid(int rows, int in, int out) {
        CompressedWeight weight = compressed(out, in, WeightFormat.Q4_K);
        NDArray widened = weight.toFloat32(manager); // (out, in)
        NDArray bias = manager.randomNormal(new Shape(out));
        NDArray x = manager.randomNormal(new Shape(rows, 1, in)); // a decode step: (B, 1, in)
        NDArray onGrid = manager.create(superBlockGrid(x.toFloatArray(), in), x.getShape());
        for (NDArray b : new NDArray[] {bias, null}) {
            assertTrue(CompressedProduct.applies(x, weight, b, rows));
            float[] expected = onGrid.getNDArrayInternal().linear(onGrid, widened, b).singletonOrThrow().toFloatArray();
            NDArray actual = CompressedProduct.multiply(x, weight, b, rows);
            assertEquals(new Shape(rows, 1, out), actual.getShape());
            assertArrayEquals(expected, actual.toFloatArray(), RoundingBound.ofProduct(onGrid, widened, b, true),
                    "rows " + rows + " bias " + (b != null));
        }
    }

    /**
     * Each row of a decode product of 2 to 8 rows is that row's product alone, bit for bit (a
     * sequence of a batch decodes as it would alone): the kernel reads a super-block once for all
     * rows, but a row's sums and their order do not depend on the rows beside it, nor on whether the
     * batch's input is read in chunks that fit L1 (6 and 8 rows of 5632 inputs) where one row's is not.
     */
    @ParameterizedTest
    @CsvSource({"2, 288, 5", "5, 2048, 9", "8, 1120, 7", "8, 5632, 20", "6, 5728, 17"})
    void eachRowOfABatchIsThatRowsProductAlone(int rows, int in, int out) {
        CompressedWeight weight = compressed(out, in, WeightFormat.Q4_K);
        float[] xs = manager.randomNormal(new Shape(rows, 1, in)).toFloatArray();
        NDArray x = manager.create(xs, new Shape(rows, 1, in));
        float[] together = CompressedProduct.multiply(x, weight, null, rows).toFloatArray();
        for (int r = 0; r < rows; r++) {
            NDArray row = manager.create(Arrays.copyOfRange(xs, r * in, (r + 1) * in), new Shape(1, 1, in));
            float[] alone = CompressedProduct.multiply(row, weight, null, 1).toFloatArray();
            assertArrayEquals(alone, Arrays.copyOfRange(together, r * out, (r + 1) * out), "row " + r);
        }
    }

    /** x rounded per 256 inputs of a row (the last run cut at in) to {@code q * d}, q = rint(x / d), d = max|x| / 127. */
    static float[] superBlockGrid(float[] x, int in) {
        float[] out = new float[x.length];
        for (int row = 0; row < x.length; row += in) {
            for (int start = row; start < row + in; start += 256) {
                int end = Math.min(start + 256, row + in);
                float max = 0;
                for (int k = start; k < end; k++) {
                    max = Math.max(max, Math.abs(x[k]));
                }
                float d = max / 127f;
                float inverse = d > 0 ? 1 / d : 0;
                for (int k = start; k < end; k++) {
                    out[k] = (float) Math.rint(x[k] * inverse) * d;
                }
            }
        }
        return out;
    }

    /**
     * The native widening (a prefill's) gives the reference's values {@code (d * sc) * q - dmin * m}
     * up to one rounding of the product {@code (d * sc) * q}, which a fused multiply-add skips: half
     * an ulp of a term no larger than twice the row's largest magnitude, and half an ulp of the result.
     */
    @ParameterizedTest
    @CsvSource({"256, 301", "96, 5", "2080, 33"})
    void theNativeWideningIsTheReferencesToOneRounding(int in, int out) {
        CompressedWeight weight = compressed(out, in, WeightFormat.Q4_K);
        float[] expected = weight.toFloatArray();
        float[] actual = CompressedProduct.widened(weight, manager).toFloatArray();
        for (int row = 0; row < out; row++) {
            float largest = 0;
            for (int k = 0; k < in; k++) {
                largest = Math.max(largest, Math.abs(expected[row * in + k]));
            }
            for (int k = 0; k < in; k++) {
                int i = row * in + k;
                assertEquals(expected[i], actual[i], Math.ulp(2 * largest), "row " + row + " input " + k);
            }
        }
    }
}
