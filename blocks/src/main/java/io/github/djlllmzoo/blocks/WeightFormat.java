package io.github.djlllmzoo.blocks;

import java.util.Locale;

/**
 * The form a model's projection weights are held in on the CPU: float32 parameters, or compressed
 * ({@link CompressedWeight}) with activations, norms and the KV cache still float32.
 */
public enum WeightFormat {
    /** Float32 parameters, as loaded: what training needs. */
    FLOAT32(4),
    /** The upper 16 bits of each float32 (a bfloat16 checkpoint's values unchanged). */
    BFLOAT16(2),
    /** IEEE half precision bits. */
    FLOAT16(2),
    /**
     * Symmetric int8 per group of {@link CompressedWeight#GROUP} input elements with one float16
     * scale per group (llama.cpp's Q8_0 layout).
     */
    INT8(1),
    /**
     * 4-bit codes per group of {@link CompressedWeight#GROUP} input elements with one float16 scale
     * per group, packed as llama.cpp's Q4_0 block ({@code (q - 8) * scale}, two codes a byte).
     * The CPU kernels multiply the packed codes as int8's (docs/cpu-kernels.md); the reference
     * {@link EngineKernels} widens each weight per product.
     */
    INT4(1),
    /**
     * 6-bit codes per group of {@link CompressedWeight#GROUP} input elements with one float16 scale
     * per group: 24 bytes a group (6.5 bits a weight with the scale), value {@code (u - 32) * scale}
     * for the stored code {@code u} in [0, 63] ({@link CompressedWeight} gives the packing). As
     * {@link #INT4}, the CPU kernels multiply the packed codes as int8's; llama.cpp's Q6_K's size
     * in a plain group.
     */
    INT6(1),
    /**
     * llama.cpp's Q4_K super-blocks ({@link Q4KBlock}: 256 inputs in 144 bytes, 4.5 bits a weight,
     * 8 sub-blocks of 32 with a 6-bit scale and min each), held packed in one buffer. More accurate
     * than {@link #INT4} at an eighth more memory; the CPU kernels multiply the packed codes
     * (docs/cpu-kernels.md, "q4_k").
     */
    Q4_K(1);

    private final int bytesPerElement;

    WeightFormat(int bytesPerElement) {
        this.bytesPerElement = bytesPerElement;
    }

    /**
     * @return bytes of one weight element's code (the scales not counted), rounded up: int4's two
     *     codes share a byte, int6's four share three ({@link CompressedWeight#codeBytes} gives a weight's exact size)
     */
    public int bytesPerElement() {
        return bytesPerElement;
    }

    /** @return whether the format keeps a float16 scale per group of inputs (int8, int4, int6) */
    public boolean isGrouped() {
        return this == INT8 || this == INT4 || this == INT6;
    }

    /** @return the name as {@code --dtype} spells it: float32, bfloat16, float16, int8, int4, int6, q4_k */
    public String dtypeName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The format a {@code dtype} name means.
     *
     * @param name float32 (fp32), bfloat16 (bf16), float16 (fp16), int8 (q8_0), int4 (q4_0), int6 or
     *     q4_k, any case
     * @return the format
     * @throws IllegalArgumentException naming the value for any other name
     */
    public static WeightFormat parse(String name) {
        switch (name.toLowerCase(Locale.ROOT)) {
            case "float32":
            case "fp32":
                return FLOAT32;
            case "bfloat16":
            case "bf16":
                return BFLOAT16;
            case "float16":
            case "fp16":
                return FLOAT16;
            case "int8":
            case "q8_0":
                return INT8;
            case "int4":
            case "q4_0":
                return INT4;
            case "int6":
                return INT6;
            case "q4_k":
                return Q4_K;
            default:
                throw new IllegalArgumentException(
                        "dtype must be float32, bfloat16, float16, int8, int4, int6 or q4_k, not '" + name + "'");
        }
    }
}
