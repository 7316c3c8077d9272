package io.github.djlllmzoo.cpu;

import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import java.nio.ByteBuffer;

/**
 * The native kernels of {@link WeightFormat#Q4_K} weights ({@code
 * cpu-kernels/src/main/native/kquant_product.c}), behind {@link CompressedProduct}'s and {@link
 * CompressedGemm}'s calls: a decode step's product of 1 to 8 rows reads each packed super-block once for
 * all rows and multiplies its 4-bit codes by the input quantized per super-block of 256 to int8 with the
 * ISA's integer dot product (llama.cpp's Q4_K x Q8_K); a prefill's rows go in tiles of 8 over panels of
 * the weight, the same products, never widened. The weight's rows are whole super-blocks of 256 inputs;
 * the input width a multiple of 32.
 */
final class KQuantProduct {

    private KQuantProduct() {}

    /**
     * Output columns {@code [from, to)} of {@code x @ weight^T + bias}.
     *
     * @param xs the rows of x, dense float32 (rows, in)
     * @param weight a q4_k weight
     * @param bias (out) float32, or {@code null}
     * @param out (rows, out) float32
     * @param rows the rows of x, at least 1
     * @param from the first column
     * @param to the column after the last
     */
    static void multiply(
            ByteBuffer xs, CompressedWeight weight, ByteBuffer bias, ByteBuffer out, int rows, int from, int to) {
        multiply(xs, weight.directBuffers()[0], bias, out, rows, weight.inFeatures(), weight.outFeatures(), from, to);
    }

    /**
     * Widens rows {@code [from, to)} of a q4_k weight to float32 into the same places of {@code out}
     * as {@link CompressedWeight#toFloatArray} holds them (each value {@code (d * sc) * q - dmin * m},
     * up to the rounding of one fused multiply-add).
     *
     * @param weight a q4_k weight
     * @param out a direct buffer of at least {@code to * in} floats in native order
     * @param from the first row
     * @param to the row after the last
     */
    static void widen(CompressedWeight weight, ByteBuffer out, int from, int to) {
        widen(weight.directBuffers()[0], out, weight.inFeatures(), from, to);
    }

    private static native void multiply(
            ByteBuffer x, ByteBuffer codes, ByteBuffer bias, ByteBuffer out, int rows, int in, int outFeatures,
            int from, int to);

    private static native void widen(ByteBuffer codes, ByteBuffer out, int in, int from, int to);
}
