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
 * the input width a multiple of 32. A decode step's input may be quantized once for a hand-over's calls
 * ({@link #prepare}) and read by each core's call ({@link #multiplyPrepared}), bit for bit the products of
 * {@link #multiply}.
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
     * Output columns {@code [from, to)} of {@code x @ weight^T + bias} with x in the form {@link #prepare}
     * made of it for these rows and the weight's input width: bit for bit {@link #multiply}'s.
     *
     * @param form the prepared form
     * @param weight a q4_k weight
     * @param bias (out) float32, or {@code null}
     * @param out (rows, out) float32
     * @param rows the rows of x, 1 to {@link CompressedProduct#MAX_ROWS}
     * @param from the first column
     * @param to the column after the last
     */
    static void multiplyPrepared(
            ByteBuffer form, CompressedWeight weight, ByteBuffer bias, ByteBuffer out, int rows, int from, int to) {
        multiplyPrepared(form, weight.directBuffers()[0], bias, out, rows, weight.inFeatures(), weight.outFeatures(),
                from, to);
    }

    /**
     * Bytes of the prepared form of a decode step's rows.
     *
     * @param rows the rows of x
     * @param in the input width
     * @return the bytes, or 0 where there is no prepared form (more than {@link
     *     CompressedProduct#MAX_ROWS} rows, a width not a multiple of 32)
     */
    static native int preparedBytes(int rows, int in);

    /**
     * Quantizes x's rows once into {@code form} (the int8 codes, scales and sums per super-block the
     * kernel reads), for {@link #multiplyPrepared}'s calls.
     *
     * @param xs the rows of x, dense float32 (rows, in)
     * @param form a direct buffer of at least {@link #preparedBytes} bytes
     * @param rows the rows of x
     * @param in the input width
     */
    static native void prepare(ByteBuffer xs, ByteBuffer form, int rows, int in);

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

    private static native void multiplyPrepared(
            ByteBuffer form, ByteBuffer codes, ByteBuffer bias, ByteBuffer out, int rows, int in, int outFeatures,
            int from, int to);

    private static native void widen(ByteBuffer codes, ByteBuffer out, int in, int from, int to);
}
