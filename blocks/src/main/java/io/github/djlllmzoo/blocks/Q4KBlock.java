package io.github.djlllmzoo.blocks;

import java.nio.ByteBuffer;

/**
 * llama.cpp's Q4_K super-block, the layout of {@link WeightFormat#Q4_K} bit for bit: 256 weights in
 * 144 bytes (4.5 bits a weight), value {@code d * sc_j * q - dmin * m_j} for a 4-bit code {@code q}
 * of sub-block {@code j} (8 of 32 weights), each sub-block with a 6-bit scale {@code sc_j} and min
 * {@code m_j} under the super-block's float16 {@code d} and {@code dmin}.
 *
 * <p>Bytes: {@code d} (float16), {@code dmin} (float16), 12 bytes of 6-bit scales and mins (sub-blocks
 * 0-3 in the low 6 bits of bytes 0-3 and 4-7; 4-7 as a low nibble in bytes 8-11 and two high bits
 * in bits 6-7 of bytes 0-7), then 128 bytes of codes: each 64 weights share 32 bytes, the first 32 in
 * the low nibbles, the next 32 in the high ones.
 *
 * <p>Quantizing follows llama.cpp's {@code quantize_row_q4_K_ref} (what {@code llama-quantize} does
 * without an importance matrix), so a model in {@code --dtype q4_k} has the rounding of a pure Q4_K
 * file: each sub-block's scale and min by a weighted least-squares search over 21 candidate grids
 * (weights {@code rms + |x|}), both quantized to 6 bits under the largest, the codes chosen again for
 * the 6-bit values. A row whose width is not a multiple of 256 has its last super-block padded with
 * zeros.
 */
public final class Q4KBlock {

    /** Weights per super-block. */
    public static final int WEIGHTS = 256;

    /** Bytes per super-block. */
    public static final int BYTES = 144;

    /** Weights per sub-block (one 6-bit scale and min). */
    static final int SUB = 32;

    private static final int SUBS = WEIGHTS / SUB;
    private static final int SCALES_AT = 4;
    private static final int CODES_AT = 16;
    private static final int LEVELS = 15;
    private static final int SIX_BITS = 63;
    /** The candidate grids of the search: {@code LEVELS + RMIN + RDELTA * i} steps over the range, i in [0, STEPS]. */
    private static final float RMIN = -1f;
    private static final float RDELTA = 0.1f;
    private static final int STEPS = 20;

    private Q4KBlock() {}

    /**
     * @param in a row's width
     * @return super-blocks per row
     */
    public static int blocks(int in) {
        return (in + WEIGHTS - 1) / WEIGHTS;
    }

    /**
     * Appends one row as super-blocks.
     *
     * @param row the row's values
     * @param out receives {@link #blocks}{@code (row.length) * BYTES} bytes at its position
     * @param scratch the arrays the blocks are worked out in, one for all rows of a weight
     */
    static void quantizeRow(float[] row, ByteBuffer out, Scratch scratch) {
        float[] x = scratch.x;
        for (int start = 0; start < row.length; start += WEIGHTS) {
            java.util.Arrays.fill(x, 0f);
            System.arraycopy(row, start, x, 0, Math.min(WEIGHTS, row.length - start));
            quantizeBlock(x, out, scratch);
        }
    }

    /**
     * The arrays {@link #quantizeRow} works a super-block out in, made once a weight: made for each
     * block (4 million in a 1B model) they were hundreds of MB of garbage a load, which filled the
     * Java heap's young generation and left it resident (bench's {@code rss_growth_mb}).
     */
    static final class Scratch {
        final float[] x = new float[WEIGHTS];
        final float[] scales = new float[SUBS];
        final float[] mins = new float[SUBS];
        final int[] codes = new int[WEIGHTS];
        final float[] weights = new float[SUB];
        final int[] trial = new int[SUB];
        final byte[] packed = new byte[12];
        final int[] sc = new int[SUBS];
        final int[] m = new int[SUBS];
        /** {@link #fitSubBlock}'s result: the scale and the (negated) min. */
        float fitScale;
        float fitMin;
    }

    private static void quantizeBlock(float[] x, ByteBuffer out, Scratch scratch) {
        float[] scales = scratch.scales;
        float[] mins = scratch.mins;
        int[] codes = scratch.codes;
        float[] weights = scratch.weights;
        float maxScale = 0;
        float maxMin = 0;
        for (int j = 0; j < SUBS; j++) {
            float sumSquares = 0;
            for (int l = 0; l < SUB; l++) {
                sumSquares += x[SUB * j + l] * x[SUB * j + l];
            }
            float rms = (float) Math.sqrt(sumSquares / SUB);
            for (int l = 0; l < SUB; l++) {
                weights[l] = rms + Math.abs(x[SUB * j + l]);
            }
            fitSubBlock(x, SUB * j, weights, codes, scratch);
            scales[j] = scratch.fitScale;
            mins[j] = scratch.fitMin;
            maxScale = Math.max(maxScale, scales[j]);
            maxMin = Math.max(maxMin, mins[j]);
        }
        float inverseScale = maxScale > 0 ? SIX_BITS / maxScale : 0;
        float inverseMin = maxMin > 0 ? SIX_BITS / maxMin : 0;
        byte[] packed = scratch.packed; // each byte set before any is or-ed into
        int[] sc = scratch.sc;
        int[] m = scratch.m;
        for (int j = 0; j < SUBS; j++) {
            sc[j] = Math.min(SIX_BITS, nearest(inverseScale * scales[j]));
            m[j] = Math.min(SIX_BITS, nearest(inverseMin * mins[j]));
            if (j < 4) {
                packed[j] = (byte) sc[j];
                packed[j + 4] = (byte) m[j];
            } else {
                packed[j + 4] = (byte) ((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
                packed[j - 4] |= (byte) ((sc[j] >> 4) << 6);
                packed[j] |= (byte) ((m[j] >> 4) << 6);
            }
        }
        short d = HalfPrecision.floatToFloat16(maxScale / SIX_BITS);
        short dmin = HalfPrecision.floatToFloat16(maxMin / SIX_BITS);
        float dValue = HalfPrecision.float16ToFloat(d);
        float dminValue = HalfPrecision.float16ToFloat(dmin);
        for (int j = 0; j < SUBS; j++) {
            float step = dValue * sc[j];
            if (step == 0) {
                continue;
            }
            float min = dminValue * m[j];
            for (int l = 0; l < SUB; l++) {
                codes[SUB * j + l] = Math.max(0, Math.min(LEVELS, nearest((x[SUB * j + l] + min) / step)));
            }
        }
        out.putShort(d);
        out.putShort(dmin);
        out.put(packed);
        for (int j = 0; j < WEIGHTS; j += 2 * SUB) {
            for (int l = 0; l < SUB; l++) {
                out.put((byte) (codes[j + l] | (codes[j + l + SUB] << 4)));
            }
        }
    }

    /**
     * The scale and (negated) min of one sub-block's codes {@code q} in [0, 15], {@code x ~ scale * q -
     * min}, minimizing the weighted squared error over a few grids; the codes into {@code codes}, the
     * scale and min (>= 0) into the scratch's {@code fitScale} and {@code fitMin}.
     */
    private static void fitSubBlock(float[] x, int at, float[] weights, int[] codes, Scratch scratch) {
        float min = x[at];
        float max = x[at];
        float sumW = 0;
        float sumX = 0;
        for (int i = 0; i < SUB; i++) {
            float v = x[at + i];
            min = Math.min(min, v);
            max = Math.max(max, v);
            sumW += weights[i];
            sumX += weights[i] * v;
        }
        min = Math.min(min, 0);
        if (max == min) {
            java.util.Arrays.fill(codes, at, at + SUB, 0);
            scratch.fitScale = 0;
            scratch.fitMin = -min;
            return;
        }
        float inverse = LEVELS / (max - min);
        float scale = 1 / inverse;
        float best = 0;
        for (int i = 0; i < SUB; i++) {
            int q = Math.max(0, Math.min(LEVELS, nearest(inverse * (x[at + i] - min))));
            codes[at + i] = q;
            float diff = scale * q + min - x[at + i];
            best += weights[i] * diff * diff;
        }
        int[] trial = scratch.trial;
        for (int step = 0; step <= STEPS; step++) {
            float trialInverse = (RMIN + RDELTA * step + LEVELS) / (max - min);
            float sumL = 0;
            float sumL2 = 0;
            float sumXL = 0;
            for (int i = 0; i < SUB; i++) {
                int q = Math.max(0, Math.min(LEVELS, nearest(trialInverse * (x[at + i] - min))));
                trial[i] = q;
                sumL += weights[i] * q;
                sumL2 += weights[i] * q * q;
                sumXL += weights[i] * q * x[at + i];
            }
            float determinant = sumW * sumL2 - sumL * sumL;
            if (determinant <= 0) {
                continue;
            }
            float trialScale = (sumW * sumXL - sumX * sumL) / determinant;
            float trialMin = (sumL2 * sumX - sumL * sumXL) / determinant;
            if (trialMin > 0) {
                trialMin = 0;
                trialScale = sumXL / sumL2;
            }
            float error = 0;
            for (int i = 0; i < SUB; i++) {
                float diff = trialScale * trial[i] + trialMin - x[at + i];
                error += weights[i] * diff * diff;
            }
            if (error < best) {
                System.arraycopy(trial, 0, codes, at, SUB);
                best = error;
                scale = trialScale;
                min = trialMin;
            }
        }
        scratch.fitScale = scale;
        scratch.fitMin = -min;
    }

    /** Rounds to the nearest integer, ties to even (as llama.cpp's {@code nearest_int}). */
    private static int nearest(float v) {
        return (int) Math.rint(v);
    }

    /**
     * Widens {@code count} weights of a row exactly as llama.cpp's {@code dequantize_row_q4_K} does:
     * {@code (d * sc) * q - dmin * m} in float32.
     *
     * @param codes the super-blocks
     * @param at the byte where the row's first super-block starts
     * @param count the row's width
     * @param into receives the values
     * @param offset where in {@code into} the row starts
     */
    static void widenRow(ByteBuffer codes, int at, int count, float[] into, int offset) {
        for (int start = 0; start < count; start += WEIGHTS, at += BYTES) {
            float d = HalfPrecision.float16ToFloat(codes.getShort(at));
            float dmin = HalfPrecision.float16ToFloat(codes.getShort(at + 2));
            for (int j = 0; j < SUBS && start + SUB * j < count; j++) {
                float step = d * subScale(codes, at + SCALES_AT, j);
                float min = dmin * subMin(codes, at + SCALES_AT, j);
                int bytes = at + CODES_AT + SUB * (j / 2);
                int shift = 4 * (j % 2);
                for (int l = 0; l < SUB && start + SUB * j + l < count; l++) {
                    int q = ((codes.get(bytes + l) & 0xFF) >> shift) & 0xF;
                    into[offset + start + SUB * j + l] = step * q - min;
                }
            }
        }
    }

    /**
     * The 6-bit scale of sub-block {@code j} (Q4_K's and Q5_K's packing).
     *
     * @param codes the blocks
     * @param scales where the block's 12 bytes of scales and mins start
     * @param j the sub-block, 0 to 7
     * @return the scale, 0 to 63
     */
    public static int subScale(ByteBuffer codes, int scales, int j) {
        if (j < 4) {
            return codes.get(scales + j) & SIX_BITS;
        }
        return (codes.get(scales + j + 4) & 0xF) | (((codes.get(scales + j - 4) & 0xFF) >> 6) << 4);
    }

    /**
     * The 6-bit min of sub-block {@code j} (Q4_K's and Q5_K's packing).
     *
     * @param codes the blocks
     * @param scales where the block's 12 bytes of scales and mins start
     * @param j the sub-block, 0 to 7
     * @return the min, 0 to 63
     */
    public static int subMin(ByteBuffer codes, int scales, int j) {
        if (j < 4) {
            return codes.get(scales + j + 4) & SIX_BITS;
        }
        return ((codes.get(scales + j + 4) & 0xFF) >> 4) | (((codes.get(scales + j) & 0xFF) >> 6) << 4);
    }
}
