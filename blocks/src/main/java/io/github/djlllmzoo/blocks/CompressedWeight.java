package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A projection weight held compressed in direct buffers outside the engine, always (out, in) row
 * major whatever the block's layout, so each output's inputs are contiguous for a kernel and for
 * int8's groups: {@link WeightFormat#BFLOAT16} and {@link WeightFormat#FLOAT16} as their 16-bit
 * codes, {@link WeightFormat#INT8} as one signed byte per element and one float32 scale per group
 * of {@link #GROUP} consecutive inputs of an output (the last group of a row shorter where {@code
 * in} is not a multiple of it). The engine never sees these bits (DJL 0.35.1's PyTorch JNI aborts
 * on bfloat16 arrays); {@link #toFloat32} widens them for the engine's products.
 */
public final class CompressedWeight {

    /** Inputs per int8 scale, as llama.cpp's Q8_0. */
    public static final int GROUP = 32;

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
     * Compresses a float32 weight: rounds to the nearest 16-bit value (ties to even), or quantizes
     * each group symmetrically to [-127, 127] with scale {@code max|w| / 127}.
     *
     * @param weight (out, in) row major
     * @param out output width
     * @param in input width
     * @param format a compressed format
     * @return the compressed weight
     */
    public static CompressedWeight compress(float[] weight, int out, int in, WeightFormat format) {
        if (format == WeightFormat.FLOAT32) {
            throw new IllegalArgumentException("float32 is not a compressed format");
        }
        if ((long) out * in != weight.length) {
            throw new IllegalArgumentException(
                    "weight has " + weight.length + " elements, not " + out + " x " + in);
        }
        ByteBuffer codes = direct((long) out * in * format.bytesPerElement());
        ByteBuffer scales = null;
        switch (format) {
            case BFLOAT16:
                for (float v : weight) {
                    codes.putShort(HalfPrecision.floatToBfloat16(v));
                }
                break;
            case FLOAT16:
                for (float v : weight) {
                    codes.putShort(HalfPrecision.floatToFloat16(v));
                }
                break;
            default:
                int groups = groups(in);
                scales = direct((long) out * groups * Float.BYTES);
                for (int row = 0; row < out; row++) {
                    for (int start = 0; start < in; start += GROUP) {
                        int offset = row * in + start;
                        int end = Math.min(in, start + GROUP) - start;
                        float max = 0;
                        for (int k = 0; k < end; k++) {
                            max = Math.max(max, Math.abs(weight[offset + k]));
                        }
                        float scale = max / 127f;
                        float inverse = scale == 0 ? 0 : 1 / scale;
                        scales.putFloat(scale);
                        for (int k = 0; k < end; k++) {
                            int q = Math.round(weight[offset + k] * inverse);
                            codes.put((byte) Math.max(-127, Math.min(127, q)));
                        }
                    }
                }
                scales.flip();
                break;
        }
        codes.flip();
        return new CompressedWeight(format, out, in, codes, scales);
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
     * @return the codes and the scales ({@code null} unless int8)
     */
    public ByteBuffer[] directBuffers() {
        return new ByteBuffer[] {codes, scales};
    }

    /** @return the bytes held: codes and scales */
    public long bytes() {
        return codes.capacity() + (scales == null ? 0 : scales.capacity());
    }

    /**
     * The weight widened to float32 exactly (int8 as {@code code * scale} in float32).
     *
     * @return (out, in) row major
     */
    public float[] toFloatArray() {
        float[] w = new float[Math.multiplyExact(out, in)];
        switch (format) {
            case BFLOAT16:
                for (int i = 0; i < w.length; i++) {
                    w[i] = HalfPrecision.bfloat16ToFloat(codes.getShort(2 * i));
                }
                break;
            case FLOAT16:
                for (int i = 0; i < w.length; i++) {
                    w[i] = HalfPrecision.float16ToFloat(codes.getShort(2 * i));
                }
                break;
            default:
                int groups = groups(in);
                for (int row = 0; row < out; row++) {
                    for (int k = 0; k < in; k++) {
                        float scale = scales.getFloat(Float.BYTES * (row * groups + k / GROUP));
                        w[row * in + k] = codes.get(row * in + k) * scale;
                    }
                }
                break;
        }
        return w;
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
     * @return int8 scales per row
     */
    public static int groups(int in) {
        return (in + GROUP - 1) / GROUP;
    }

    private static ByteBuffer direct(long bytes) {
        return ByteBuffer.allocateDirect(Math.toIntExact(bytes)).order(ByteOrder.nativeOrder());
    }
}
