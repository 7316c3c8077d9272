package io.github.djlllmzoo.zoo.gguf;

import io.github.djlllmzoo.blocks.HalfPrecision;
import io.github.djlllmzoo.blocks.Q4KBlock;
import java.nio.ByteBuffer;
import java.util.Map;

/**
 * The ggml tensor types this project decodes, with their block layouts (ggml's {@code
 * ggml-common.h}): elements per block and bytes per block. A quantized type is decoded a row at a
 * time into float32 by the dequantization ggml defines for it.
 */
public enum GgufType {
    /** IEEE single precision. */
    F32(0, 1, 4),
    /** IEEE half precision. */
    F16(1, 1, 2),
    /** 32 weights: a float16 scale {@code d} and 16 bytes of 4-bit codes, {@code w = (q - 8) * d}. */
    Q4_0(2, 32, 18),
    /** 32 weights: a float16 scale {@code d} and 32 signed bytes, {@code w = q * d}. */
    Q8_0(8, 32, 34),
    /**
     * 256 weights in 8 sub-blocks of 32: float16 {@code d} and {@code dmin}, 12 bytes of 6-bit
     * sub-block scales and mins, 128 bytes of 4-bit codes; {@code w = d * sc * q - dmin * m}.
     */
    Q4_K(12, 256, 144),
    /** Q4_K with a fifth bit per code (32 bytes of high bits before the low nibbles). */
    Q5_K(13, 256, 176),
    /**
     * 256 weights in 16 sub-blocks of 16: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16
     * signed 8-bit sub-block scales, a float16 {@code d}; {@code w = d * sc * (q - 32)}.
     */
    Q6_K(14, 256, 210),
    /** The upper 16 bits of a float32. */
    BF16(30, 1, 2);

    /** ggml's names of the types this project does not decode, for messages. */
    private static final Map<Integer, String> OTHER_NAMES = Map.ofEntries(
            Map.entry(3, "Q4_1"), Map.entry(6, "Q5_0"), Map.entry(7, "Q5_1"), Map.entry(9, "Q8_1"),
            Map.entry(10, "Q2_K"), Map.entry(11, "Q3_K"), Map.entry(15, "Q8_K"), Map.entry(16, "IQ2_XXS"),
            Map.entry(17, "IQ2_XS"), Map.entry(18, "IQ3_XXS"), Map.entry(19, "IQ1_S"), Map.entry(20, "IQ4_NL"),
            Map.entry(21, "IQ3_S"), Map.entry(22, "IQ2_S"), Map.entry(23, "IQ4_XS"), Map.entry(24, "I8"),
            Map.entry(25, "I16"), Map.entry(26, "I32"), Map.entry(27, "I64"), Map.entry(28, "F64"),
            Map.entry(29, "IQ1_M"), Map.entry(34, "TQ1_0"), Map.entry(35, "TQ2_0"));

    private static final int K_SCALE_BYTES = 12;

    private final int id;
    private final int blockElements;
    private final int blockBytes;

    GgufType(int id, int blockElements, int blockBytes) {
        this.id = id;
        this.blockElements = blockElements;
        this.blockBytes = blockBytes;
    }

    /** @return ggml's type id, as stored in a tensor info */
    public int id() {
        return id;
    }

    /** @return elements per block (1 for the float types) */
    public int blockElements() {
        return blockElements;
    }

    /** @return bytes per block */
    public int blockBytes() {
        return blockBytes;
    }

    /** @return whether this is one of the block-quantized types */
    public boolean isQuantized() {
        return blockElements > 1;
    }

    /**
     * The type of a stored id.
     *
     * @param id ggml's type id
     * @return the type, or {@code null} when this project does not decode it
     */
    static GgufType of(int id) {
        for (GgufType type : values()) {
            if (type.id == id) {
                return type;
            }
        }
        return null;
    }

    /**
     * ggml's name of a type id, for messages.
     *
     * @param id ggml's type id
     * @return e.g. "Q4_1", or "type 99" for an id ggml does not name
     */
    static String nameOf(int id) {
        GgufType type = of(id);
        return type != null ? type.name() : OTHER_NAMES.getOrDefault(id, "type " + id);
    }

    /**
     * The bytes {@code elements} consecutive elements take.
     *
     * @param elements a multiple of {@link #blockElements()}
     * @return their size
     */
    public long bytes(long elements) {
        return elements / blockElements * blockBytes;
    }

    /**
     * Decodes {@code count} consecutive elements (a whole number of blocks) starting at {@code
     * data}'s position (absolute reads; the buffer is little-endian).
     *
     * @param data the encoded elements, little-endian, at their first block
     * @param out receives the values
     * @param offset where in {@code out} they go
     * @param count how many, a multiple of {@link #blockElements()}
     */
    public void decode(ByteBuffer data, float[] out, int offset, int count) {
        int at = data.position();
        for (int block = 0; block < count / blockElements; block++) {
            int o = offset + block * blockElements;
            switch (this) {
                case F32:
                    out[o] = data.getFloat(at);
                    break;
                case F16:
                    out[o] = HalfPrecision.float16ToFloat(data.getShort(at));
                    break;
                case BF16:
                    out[o] = HalfPrecision.bfloat16ToFloat(data.getShort(at));
                    break;
                case Q8_0:
                    decodeQ8_0(data, at, out, o);
                    break;
                case Q4_0:
                    decodeQ4_0(data, at, out, o);
                    break;
                case Q4_K:
                case Q5_K:
                    decodeQ45K(data, at, out, o, this == Q5_K);
                    break;
                default:
                    decodeQ6K(data, at, out, o);
                    break;
            }
            at += blockBytes;
        }
    }

    private static float half(ByteBuffer data, int at) {
        return HalfPrecision.float16ToFloat(data.getShort(at));
    }

    private static void decodeQ8_0(ByteBuffer data, int at, float[] out, int o) {
        float d = half(data, at);
        for (int k = 0; k < 32; k++) {
            out[o + k] = data.get(at + 2 + k) * d;
        }
    }

    /** Element k of the block is the low nibble of byte k, element k + 16 its high nibble. */
    private static void decodeQ4_0(ByteBuffer data, int at, float[] out, int o) {
        float d = half(data, at);
        for (int k = 0; k < 16; k++) {
            int b = data.get(at + 2 + k) & 0xFF;
            out[o + k] = ((b & 0xF) - 8) * d;
            out[o + k + 16] = ((b >> 4) - 8) * d;
        }
    }

    /**
     * Q4_K and Q5_K: each 64 weights share 32 code bytes, the first 32 weights in their low
     * nibbles and the next 32 in their high nibbles, each half with its own 6-bit scale and min;
     * Q5_K adds bit {@code 2j} (low half) or {@code 2j + 1} (high half) of the j-th 64 from {@code qh}.
     */
    private static void decodeQ45K(ByteBuffer data, int at, float[] out, int o, boolean fifthBit) {
        float d = half(data, at);
        float dmin = half(data, at + 2);
        int scales = at + 4;
        int qh = scales + K_SCALE_BYTES;
        int qs = fifthBit ? qh + 32 : qh;
        for (int j = 0; j < 4; j++) {
            for (int half = 0; half < 2; half++) {
                int sub = 2 * j + half;
                float scale = d * Q4KBlock.subScale(data, scales, sub);
                float min = dmin * Q4KBlock.subMin(data, scales, sub);
                int bit = 1 << sub;
                for (int l = 0; l < 32; l++) {
                    int b = data.get(qs + 32 * j + l) & 0xFF;
                    int q = half == 0 ? b & 0xF : b >> 4;
                    if (fifthBit && (data.get(qh + l) & bit) != 0) {
                        q += 16;
                    }
                    out[o + 64 * j + 32 * half + l] = scale * q - min;
                }
            }
        }
    }

    /**
     * Q6_K: two halves of 128 weights, each from 64 low-nibble bytes and 32 high-bit bytes; within a
     * half, weights l, l+32, l+64, l+96 take the low/high nibbles of bytes l and l+32 and bit pairs
     * 0-1, 2-3, 4-5, 6-7 of high byte l; one signed scale per 16 weights.
     */
    private static void decodeQ6K(ByteBuffer data, int at, float[] out, int o) {
        int ql = at;
        int qh = at + 128;
        int sc = at + 192;
        float d = half(data, at + 208);
        for (int n = 0; n < 2; n++) {
            for (int l = 0; l < 32; l++) {
                int low = data.get(ql + 64 * n + l) & 0xFF;
                int low2 = data.get(ql + 64 * n + l + 32) & 0xFF;
                int high = data.get(qh + 32 * n + l) & 0xFF;
                // four codes as locals, not an array: an array a step was 1.4 GB of garbage over a 1B
                // model's Q6_K tensors, which filled the Java heap's young generation during the load
                int base = o + 128 * n + l;
                int scales = sc + 8 * n + l / 16;
                out[base] = d * data.get(scales) * (((low & 0xF) | ((high & 3) << 4)) - 32);
                out[base + 32] = d * data.get(scales + 2) * (((low2 & 0xF) | (((high >> 2) & 3) << 4)) - 32);
                out[base + 64] = d * data.get(scales + 4) * (((low >> 4) | (((high >> 4) & 3) << 4)) - 32);
                out[base + 96] = d * data.get(scales + 6) * (((low2 >> 4) | (((high >> 6) & 3) << 4)) - 32);
            }
        }
    }
}
