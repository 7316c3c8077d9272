package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.types.DataType;
import java.util.Locale;

/**
 * The element type a model's KV cache stores keys and values in ({@code --kv-cache-dtype}, the
 * Criteria argument {@code kvCacheDtype}), whatever type the model computes in: llama.cpp's {@code
 * --cache-type-k/v}, vLLM's {@code kv_cache_dtype}. A float16 cache rounds each key and value to
 * the nearest half (ties to even) as it stores them and widens them back to the compute type as
 * attention reads them: half the bytes a decode step reads from the cache, twice the positions in
 * the same memory. Never bfloat16: DJL's PyTorch JNI aborts the JVM on bfloat16 arrays.
 */
public enum KvCacheDtype {
    /** Keys and values in float32 (4 bytes an element). */
    FLOAT32(DataType.FLOAT32),
    /** Keys and values in IEEE half precision (2 bytes an element), rounded to nearest even. */
    FLOAT16(DataType.FLOAT16);

    /** The option's name on the command line. */
    public static final String OPTION = "--kv-cache-dtype";

    /** The argument's name in a Criteria ({@code optArgument}) or a model URL's query. */
    public static final String ARGUMENT = "kvCacheDtype";

    private final DataType dataType;

    KvCacheDtype(DataType dataType) {
        this.dataType = dataType;
    }

    /** @return the element type of the cache's arrays */
    public DataType dataType() {
        return dataType;
    }

    /** @return the name as {@code --kv-cache-dtype} spells it: float32 or float16 */
    public String dtypeName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The cache type a name means.
     *
     * @param name float32 (fp32, f32) or float16 (fp16, f16), any case
     * @param option where the name came from, named in the error ({@link #OPTION}, {@link #ARGUMENT})
     * @return the type
     * @throws IllegalArgumentException naming the option and the value for any other name
     */
    public static KvCacheDtype parse(String name, String option) {
        switch (name.toLowerCase(Locale.ROOT)) {
            case "float32":
            case "fp32":
            case "f32":
                return FLOAT32;
            case "float16":
            case "fp16":
            case "f16":
                return FLOAT16;
            default:
                throw new IllegalArgumentException(
                        option + " must be float32 or float16, not '" + name + "'");
        }
    }
}
