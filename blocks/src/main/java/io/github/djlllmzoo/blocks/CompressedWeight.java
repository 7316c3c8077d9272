package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.stream.IntStream;

/**
 * A projection weight held compressed in direct buffers outside the engine, always (out, in) row
 * major whatever the block's layout, so each output's inputs are contiguous for a kernel and for
 * int8's groups: {@link WeightFormat#BFLOAT16} and {@link WeightFormat#FLOAT16} as their 16-bit
 * codes, {@link WeightFormat#INT8} as one signed byte per element and one float16 scale per group
 * of {@link #GROUP} consecutive inputs of an output (the last group of a row shorter where {@code
 * in} is not a multiple of it): llama.cpp's Q8_0 block of 34 bytes per 32 weights, its codes and
 * its scales each in a buffer of their own so that a kernel's loads of the codes stay aligned;
 * {@link WeightFormat#INT4} as llama.cpp's Q4_0 block (16 bytes of 4-bit codes per group of 32,
 * value {@code (q - 8) * scale}) with the same scales; {@link WeightFormat#INT6} in 24 bytes a group
 * of 32 with the same scales (value {@code (u - 32) * scale}: the low 4 bits of each code {@code u}
 * as Q4_0's nibbles in 16 bytes, then 8 bytes of high 2 bits, byte {@code k} holding those of
 * elements {@code k, k + 8, k + 16, k + 24} from its low bits up, so a kernel unpacks a group with
 * a few vector operations); {@link WeightFormat#Q4_K} as llama.cpp's Q4_K
 * super-blocks ({@link Q4KBlock}, each row in whole super-blocks of 256 inputs, its scales inside the
 * blocks: no scale buffer). The engine never sees these bits (DJL 0.35.1's PyTorch JNI aborts
 * on bfloat16 arrays); {@link #toFloat32} widens them for the engine's products.
 */
public final class CompressedWeight {

    /** Inputs per int8 scale, as llama.cpp's Q8_0. */
    public static final int GROUP = 32;

    /** Bytes of one int8 group's scale: IEEE half precision, as llama.cpp's Q8_0. */
    public static final int SCALE_BYTES = Short.BYTES;

    /** The largest finite float16. */
    private static final float MAX_FLOAT16 = 65504f;

    /** Q4_K and int6 rows read before they are fitted in parallel: enough to share out, few enough to stay in cache. */
    private static final int FITTED_ROWS_AT_ONCE = 64;

    private final WeightFormat format;
    private final int out;
    private final int in;
    private final ByteBuffer codes;
    private final ByteBuffer scales;

    private CompressedWeight(WeightFormat format, int out, int in, ByteBuffer codes, ByteBuffer scales) {
        this.format = format;
        this.out = out;
        this.in = in;
        this.codes = codes;
        this.scales = scales;
    }

    /**
     * Fills one row of an (out, in) weight with its float values: what {@link
     * #compress(Rows, int, int, WeightFormat)} reads, a row at a time, so that no float32 copy of
     * the whole weight need exist.
     */
    @FunctionalInterface
    public interface Rows {
        /**
         * @param row the output index
         * @param values receives the row's {@code in} values
         */
        void read(int row, float[] values);
    }

    /**
     * Compresses a float32 weight: rounds to the nearest 16-bit value (ties to even), or quantizes
     * each group symmetrically to [-127, 127] with scale {@code max|w| / 127} rounded to float16,
     * each code the weight divided by that rounded scale.
     *
     * @param weight (out, in) row major
     * @param out output width
     * @param in input width
     * @param format a compressed format
     * @return the compressed weight
     */
    public static CompressedWeight compress(float[] weight, int out, int in, WeightFormat format) {
        if ((long) out * in != weight.length) {
            throw new IllegalArgumentException(
                    "weight has " + weight.length + " elements, not " + out + " x " + in);
        }
        return compress((row, values) -> System.arraycopy(weight, row * in, values, 0, in), out, in, format);
    }

    /**
     * Compresses a weight read a row at a time, as {@link #compress(float[], int, int,
     * WeightFormat)} does the whole array.
     *
     * @param rows reads each row (out, in)
     * @param out output width
     * @param in input width
     * @param format a compressed format
     * @return the compressed weight
     */
    public static CompressedWeight compress(Rows rows, int out, int in, WeightFormat format) {
        if (format == WeightFormat.FLOAT32) {
            throw new IllegalArgumentException("float32 is not a compressed format");
        }
        ByteBuffer codes = direct(codeBytes(format, out, in));
        if (format == WeightFormat.Q4_K) {
            compressFitted(rows, out, in, codes, null,
                    (row, place, unused, scratch) -> Q4KBlock.quantizeRow(row, place, scratch));
            return new CompressedWeight(format, out, in, codes, null);
        }
        ByteBuffer scales = format.isGrouped() ? direct((long) out * groups(in) * SCALE_BYTES) : null;
        if (format == WeightFormat.INT6) {
            compressFitted(rows, out, in, codes, scales,
                    (row, place, scalePlace, scratch) -> quantizePacked(row, place, scalePlace, format));
            return new CompressedWeight(format, out, in, codes, scales);
        }
        float[] row = new float[in];
        for (int r = 0; r < out; r++) {
            rows.read(r, row);
            switch (format) {
                case BFLOAT16:
                    for (float v : row) {
                        codes.putShort(HalfPrecision.floatToBfloat16(v));
                    }
                    break;
                case FLOAT16:
                    for (float v : row) {
                        codes.putShort(HalfPrecision.floatToFloat16(v));
                    }
                    break;
                case INT4:
                case INT6:
                    quantizePacked(row, codes, scales, format);
                    break;
                default:
                    quantize(row, codes, scales);
                    break;
            }
        }
        codes.flip();
        if (scales != null) {
            scales.flip();
        }
        return new CompressedWeight(format, out, in, codes, scales);
    }

    /** Fits one row into views of the codes (and scales) positioned at the row's place. */
    @FunctionalInterface
    private interface RowFit {
        void fit(float[] row, ByteBuffer codes, ByteBuffer scales, Q4KBlock.Scratch scratch);
    }

    /**
     * Q4_K's and int6's rows: read in order (a reader may share one staging buffer), fitted in
     * parallel, each into its own place. A Q4_K super-block's fit searches 21 grids a sub-block, ~40
     * times an int8 row's work, and an int6 group's 19 (llama.cpp's Q6_K fit), ~15 times: they set a
     * 1B model's load time; rows are independent, so the bytes are those one thread writes.
     */
    private static void compressFitted(Rows rows, int out, int in, ByteBuffer codes, ByteBuffer scales, RowFit fit) {
        int rowBytes = Math.toIntExact(codes.capacity() / out);
        int rowScaleBytes = groups(in) * SCALE_BYTES;
        int batch = Math.min(out, FITTED_ROWS_AT_ONCE);
        float[][] read = new float[batch][in];
        ThreadLocal<Q4KBlock.Scratch> scratch = ThreadLocal.withInitial(Q4KBlock.Scratch::new);
        // a view of the codes per thread, not per row: 400,000 views were 20 MB of a 1B model's load garbage
        ThreadLocal<ByteBuffer> places = ThreadLocal.withInitial(() -> codes.duplicate().order(codes.order()));
        ThreadLocal<ByteBuffer> scalePlaces = ThreadLocal.withInitial(
                () -> scales == null ? null : scales.duplicate().order(scales.order()));
        for (int first = 0; first < out; first += batch) {
            int count = Math.min(batch, out - first);
            for (int i = 0; i < count; i++) {
                rows.read(first + i, read[i]);
            }
            int start = first;
            IntStream.range(0, count).parallel().forEach(i -> {
                ByteBuffer place = places.get();
                place.position(Math.multiplyExact(start + i, rowBytes));
                ByteBuffer scalePlace = scalePlaces.get();
                if (scalePlace != null) {
                    scalePlace.position(Math.multiplyExact(start + i, rowScaleBytes));
                }
                fit.fit(read[i], place, scalePlace, scratch.get());
            });
        }
        // codes and scales stay at position 0 with their limits at the last row's end, as a flip leaves them
    }

    /**
     * Appends one row's int8 codes and its groups' float16 scales. The codes divide by the scale as
     * stored (rounded to float16), not by the exact {@code max / 127} as llama.cpp's Q8_0 does, so
     * that {@code code * scale} is the weight to half a step of the grid the kernels multiply by.
     */
    private static void quantize(float[] row, ByteBuffer codes, ByteBuffer scales) {
        for (int start = 0; start < row.length; start += GROUP) {
            int end = Math.min(row.length, start + GROUP);
            float max = 0;
            for (int k = start; k < end; k++) {
                max = Math.max(max, Math.abs(row[k]));
            }
            short half = scaleOf(max, 127, WeightFormat.INT8);
            float scale = HalfPrecision.float16ToFloat(half);
            float inverse = scale == 0 ? 0 : 1 / scale;
            scales.putShort(half);
            for (int k = start; k < end; k++) {
                int q = Math.round(row[k] * inverse);
                codes.put((byte) Math.max(-127, Math.min(127, q)));
            }
        }
    }

    /**
     * A group's float16 scale, {@code extreme / code}, the code the group's extreme value takes.
     *
     * @throws IllegalArgumentException if the scale is beyond float16's range
     */
    private static short scaleOf(float extreme, int code, WeightFormat format) {
        short half = HalfPrecision.floatToFloat16(extreme / code);
        if (Float.isInfinite(HalfPrecision.float16ToFloat(half)) && Float.isFinite(extreme)) {
            // the name only here: dtypeName() makes a string, per group it was 0.5 GB of a 1B model's load garbage
            throw new IllegalArgumentException("an " + format.dtypeName() + " group's largest weight " + extreme
                    + " is beyond what a float16 scale holds (" + MAX_FLOAT16 * Math.abs(code) + ")");
        }
        return half;
    }

    /**
     * Appends one row's int4 or int6 groups, packed as {@link #pack} does, and their float16 scales.
     * As llama.cpp's Q4_0 the scale is the group's value of largest magnitude over the most negative
     * code ({@code -8}; int6: {@code -32}), so that value is that code exactly; each weight's code is
     * {@code Math.round(w / scale)} (halves up) clamped to [{@code -8}, 7] (int6: [{@code -32}, 31]),
     * the scale as stored (rounded to float16), as int8's do, and held as {@code u = q + 8} ({@code q
     * + 32}). int6's scale is then fitted as llama.cpp fits Q6_K's ({@link #fittedScale}), which
     * moved a model's log-probabilities less. A short last group is padded with code 0.
     */
    private static void quantizePacked(float[] row, ByteBuffer codes, ByteBuffer scales, WeightFormat format) {
        int offset = codeOffset(format);
        byte[] packed = new byte[groupBytes(format)];
        int[] group = new int[GROUP];
        for (int start = 0; start < row.length; start += GROUP) {
            int end = Math.min(row.length, start + GROUP);
            float extreme = 0;
            for (int k = start; k < end; k++) {
                if (Math.abs(row[k]) > Math.abs(extreme)) {
                    extreme = row[k];
                }
            }
            short half = scaleOf(extreme, -offset, format);
            if (format == WeightFormat.INT6) {
                short fitted = HalfPrecision.floatToFloat16(fittedScale(row, start, end, extreme));
                half = Float.isFinite(HalfPrecision.float16ToFloat(fitted)) ? fitted : half;
            }
            float scale = HalfPrecision.float16ToFloat(half);
            float inverse = scale == 0 ? 0 : 1 / scale;
            scales.putShort(half);
            java.util.Arrays.fill(group, offset);
            for (int k = start; k < end; k++) {
                group[k - start] = Math.max(0, Math.min(2 * offset - 1, Math.round(row[k] * inverse) + offset));
            }
            pack(group, packed, format);
            codes.put(packed);
        }
    }

    /**
     * An int6 group's scale as llama.cpp fits Q6_K's sub-blocks ({@code make_qx_quants}, its
     * weights {@code x^2}): for each of 19 grids {@code extreme / -(32 + 0.1 i)}, {@code i} in
     * [-9, 9], the codes rounded and clamped to [-32, 31] and the scale that fits them best by least
     * squares; the grid whose fit leaves the least weighted squared error wins. The fitted scale then
     * takes the codes as any scale does (rounded again to it as stored).
     */
    private static float fittedScale(float[] row, int start, int end, float extreme) {
        float best = extreme / -32;
        double bestFit = 0;
        for (int i = -9; i <= 9 && extreme != 0; i++) {
            float inverse = -(32 + 0.1f * i) / extreme;
            float sumLx = 0;
            float sumL2 = 0;
            for (int k = start; k < end; k++) {
                float x = row[k];
                float l = Math.max(-32f, Math.min(31f, (float) Math.floor(x * inverse + 0.5f)));
                float wl = x * x * l;
                sumLx += wl * x;
                sumL2 += wl * l;
            }
            // the least-squares scale sumLx / sumL2 leaves the error sum(w x^2) - sumLx^2 / sumL2
            if (sumL2 > 0 && sumLx * sumLx > bestFit * sumL2) {
                bestFit = sumLx * sumLx / sumL2;
                best = (float) (sumLx / sumL2);
            }
        }
        return best;
    }

    /** What an int4 or int6 code holds its value {@code q} as: {@code u = q + offset}, unsigned. */
    private static int codeOffset(WeightFormat format) {
        return format == WeightFormat.INT6 ? 32 : 8;
    }

    /** Bytes of one int4 (llama.cpp's Q4_0: 16) or int6 (24) group's codes. */
    private static int groupBytes(WeightFormat format) {
        return format == WeightFormat.INT6 ? GROUP / 2 + GROUP / 4 : GROUP / 2;
    }

    /**
     * One group's unsigned codes {@code u} packed: element {@code j}'s low 4 bits in the low nibble
     * of byte {@code j} for {@code j < 16}, in the high nibble of byte {@code j - 16} for the others
     * (llama.cpp's Q4_0); int6's high 2 bits in bytes 16 to 23, byte {@code 16 + k} holding those of
     * elements {@code k, k + 8, k + 16, k + 24} in its bits 0-1, 2-3, 4-5, 6-7.
     */
    private static void pack(int[] group, byte[] packed, WeightFormat format) {
        java.util.Arrays.fill(packed, (byte) 0);
        for (int j = 0; j < GROUP; j++) {
            packed[j % (GROUP / 2)] |= (byte) ((group[j] & 0xF) << (j < GROUP / 2 ? 0 : 4));
            if (format == WeightFormat.INT6) {
                packed[GROUP / 2 + j % 8] |= (byte) ((group[j] >> 4) << (2 * (j / 8)));
            }
        }
    }

    /** Element {@code j}'s value {@code q} in the int4 or int6 group whose codes start at byte {@code at}. */
    private int packedCode(int at, int j) {
        int b = codes.get(at + j % (GROUP / 2)) & 0xFF;
        int low = j < GROUP / 2 ? b & 0xF : b >> 4;
        if (format != WeightFormat.INT6) {
            return low - 8;
        }
        int high = (codes.get(at + GROUP / 2 + j % 8) >> (2 * (j / 8))) & 3;
        return (low | high << 4) - 32;
    }

    /**
     * The bytes of a weight's codes (its scales not counted).
     *
     * @param format a compressed format
     * @param out output width
     * @param in input width
     * @return {@code out * in} codes' bytes; int4's rows in whole groups of two codes a byte, int6's
     *     of 24 bytes, q4_k's in whole super-blocks (scales included)
     */
    public static long codeBytes(WeightFormat format, int out, int in) {
        switch (format) {
            case INT4:
            case INT6:
                return (long) out * groups(in) * groupBytes(format);
            case Q4_K:
                return (long) out * Q4KBlock.blocks(in) * Q4KBlock.BYTES;
            default:
                return (long) out * in * format.bytesPerElement();
        }
    }

    /**
     * A 16-bit or q4_k weight from its codes as they are (a checkpoint's bfloat16 or float16 tensor,
     * a GGUF file's Q4_K blocks, kept bit for bit).
     *
     * @param format {@link WeightFormat#BFLOAT16}, {@link WeightFormat#FLOAT16} or {@link
     *     WeightFormat#Q4_K}
     * @param out output width
     * @param in input width
     * @param codes a direct buffer of exactly {@link #codeBytes} bytes: 16-bit codes (out, in) row
     *     major, or each row's Q4_K super-blocks; native byte order; the weight keeps it
     * @return the compressed weight
     * @throws IllegalArgumentException if the format is not one of those or the buffer does not fit
     */
    public static CompressedWeight ofCodes(WeightFormat format, int out, int in, ByteBuffer codes) {
        if (format != WeightFormat.BFLOAT16 && format != WeightFormat.FLOAT16 && format != WeightFormat.Q4_K) {
            throw new IllegalArgumentException(format.dtypeName() + " weights are not held as their codes alone");
        }
        if (!codes.isDirect() || codes.capacity() != codeBytes(format, out, in)) {
            throw new IllegalArgumentException(
                    "codes of a " + out + " x " + in + " " + format.dtypeName() + " weight must be a direct buffer of "
                            + codeBytes(format, out, in) + " bytes, not " + codes.capacity());
        }
        return new CompressedWeight(format, out, in, codes.clear().order(ByteOrder.nativeOrder()), null);
    }

    /**
     * An int8, int4 or int6 weight from its codes and scales as they are (a GGUF file's Q8_0 blocks,
     * or Q4_0's: int8 with the 4-bit codes recentred, or int4 packed as they are), kept without
     * re-quantizing.
     *
     * @param format {@link WeightFormat#INT8}, {@link WeightFormat#INT4} or {@link WeightFormat#INT6}
     * @param out output width
     * @param in input width, a multiple of {@link #GROUP}
     * @param codes a direct buffer of exactly {@link #codeBytes} bytes: int8's signed codes (out, in)
     *     row major, or int4's groups packed as Q4_0 packs them (int6's as {@link #compress} packs them)
     * @param scales a direct buffer of {@code out * in / GROUP} float16 scales, native byte order
     * @return the compressed weight; it keeps both buffers
     * @throws IllegalArgumentException if the format is not grouped, {@code in} not a multiple of
     *     the group, or a buffer does not fit
     */
    public static CompressedWeight ofCodes(
            WeightFormat format, int out, int in, ByteBuffer codes, ByteBuffer scales) {
        long groups = (long) out * groups(in);
        if (!format.isGrouped()
                || in % GROUP != 0
                || !codes.isDirect()
                || !scales.isDirect()
                || codes.capacity() != codeBytes(format, out, in)
                || scales.capacity() != groups * SCALE_BYTES) {
            throw new IllegalArgumentException(format.dtypeName() + " codes and scales of a " + out + " x " + in
                    + " weight must be direct buffers of " + codeBytes(format, out, in) + " and "
                    + groups * SCALE_BYTES + " bytes (in a multiple of " + GROUP + "), not " + codes.capacity()
                    + " and " + scales.capacity());
        }
        return new CompressedWeight(format, out, in, codes.clear(), scales.clear().order(ByteOrder.nativeOrder()));
    }

    /** @return the format */
    public WeightFormat format() {
        return format;
    }

    /** @return the output width */
    public int outFeatures() {
        return out;
    }

    /** @return the input width */
    public int inFeatures() {
        return in;
    }

    /** @return the codes, (out, in) row major, native byte order (a read-only view) */
    public ByteBuffer codes() {
        return codes.asReadOnlyBuffer().order(ByteOrder.nativeOrder());
    }

    /**
     * The direct buffers themselves, for a native kernel that reads their addresses.
     *
     * @return the codes and the scales ({@code null} unless int8, int4 or int6)
     */
    public ByteBuffer[] directBuffers() {
        return new ByteBuffer[] {codes, scales};
    }

    /** @return the bytes held: codes and scales */
    public long bytes() {
        return codes.capacity() + (scales == null ? 0 : scales.capacity());
    }

    /** @return the bytes one row (output) is held in: its codes and, for int8, int4 and int6, its scales */
    public long rowBytes() {
        return codeBytes(format, 1, in) + (scales == null ? 0 : (long) groups(in) * SCALE_BYTES);
    }

    /**
     * The weight widened to float32 exactly (int8 as {@code code * scale} in float32, the scale
     * widened from float16 exactly).
     *
     * @return (out, in) row major
     */
    public float[] toFloatArray() {
        float[] w = new float[Math.multiplyExact(out, in)];
        for (int row = 0; row < out; row++) {
            widenRow(row, w, row * in);
        }
        return w;
    }

    /**
     * Widens one row exactly, as {@link #toFloatArray()} does every row.
     *
     * @param row the output index
     * @param into receives the row's {@code in} values
     * @param offset where in {@code into} the row starts
     * @throws IndexOutOfBoundsException if {@code row} is not in [0, out)
     */
    public void widenRow(int row, float[] into, int offset) {
        if (row < 0 || row >= out) {
            throw new IndexOutOfBoundsException("row " + row + " of a weight of " + out + " rows");
        }
        int base = row * in;
        switch (format) {
            case BFLOAT16:
                for (int k = 0; k < in; k++) {
                    into[offset + k] = HalfPrecision.bfloat16ToFloat(codes.getShort(2 * (base + k)));
                }
                break;
            case FLOAT16:
                for (int k = 0; k < in; k++) {
                    into[offset + k] = HalfPrecision.float16ToFloat(codes.getShort(2 * (base + k)));
                }
                break;
            case Q4_K:
                Q4KBlock.widenRow(codes, Math.toIntExact(codeBytes(format, row, in)), in, into, offset);
                break;
            case INT4:
            case INT6:
                int packedGroups = groups(in);
                for (int g = 0; g < packedGroups; g++) {
                    int at = row * packedGroups + g;
                    float scale = HalfPrecision.float16ToFloat(scales.getShort(SCALE_BYTES * at));
                    for (int k = g * GROUP; k < Math.min(in, (g + 1) * GROUP); k++) {
                        into[offset + k] = packedCode(at * groupBytes(format), k - g * GROUP) * scale;
                    }
                }
                break;
            default:
                int groups = groups(in);
                for (int g = 0; g < groups; g++) {
                    float scale = HalfPrecision.float16ToFloat(scales.getShort(SCALE_BYTES * (row * groups + g)));
                    for (int k = g * GROUP; k < Math.min(in, (g + 1) * GROUP); k++) {
                        into[offset + k] = codes.get(base + k) * scale;
                    }
                }
                break;
        }
    }

    /**
     * The weight widened to a float32 array of the engine, for its products.
     *
     * @param manager the manager to attach it to
     * @return (out, in)
     */
    public NDArray toFloat32(NDManager manager) {
        return manager.create(toFloatArray(), new Shape(out, in));
    }

    /**
     * @param in inputs per row
     * @return int8 (int4, int6) scales per row
     */
    public static int groups(int in) {
        return (in + GROUP - 1) / GROUP;
    }

    private static ByteBuffer direct(long bytes) {
        return ByteBuffer.allocateDirect(Math.toIntExact(bytes)).order(ByteOrder.nativeOrder());
    }
}
