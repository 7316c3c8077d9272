package io.github.djlllmzoo.zoo;

import ai.djl.Device;
import ai.djl.ndarray.types.DataType;
import ai.djl.repository.zoo.Criteria;
import io.github.djlllmzoo.blocks.Float16Overflow;
import io.github.djlllmzoo.blocks.KvCacheDtype;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.zoo.hub.HubClient;
import io.github.djlllmzoo.zoo.hub.HubConfig;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The arguments this zoo's loaders read, whichever way DJL hands them over (Criteria options and
 * arguments, or the query of a model URL): {@code model}, {@code revision}, {@code dtype}, {@code
 * kvCacheDtype}, {@code allowFloat16Overflow} and the
 * Hugging Face hub variables ({@code HF_ENDPOINT}, {@code HF_HUB_CACHE}, {@code HF_TOKEN}, {@code
 * HF_HUB_OFFLINE}, ...), which override the process environment for one load.
 */
final class ZooArguments {

    /** The argument that lets Gemma 2 and 3 compute in float16 ({@link Float16Overflow#ALLOW}). */
    static final String ALLOW_FLOAT16_OVERFLOW = "allowFloat16Overflow";

    private ZooArguments() {}

    /** The criteria's options ({@code optOption}) overlaid by its arguments ({@code optArgument}). */
    static Map<String, Object> of(Criteria<?, ?> criteria) {
        Map<String, Object> merged = new HashMap<>();
        if (criteria.getOptions() != null) {
            merged.putAll(criteria.getOptions());
        }
        if (criteria.getArguments() != null) {
            merged.putAll(criteria.getArguments());
        }
        return merged;
    }

    static String string(Map<String, ?> arguments, String key) {
        Object value = arguments.get(key);
        return value == null ? null : value.toString();
    }

    /**
     * The hub client for these arguments: the process environment with each {@code HF_*} argument
     * in place of the variable of the same name.
     */
    static HubClient hub(Map<String, ?> arguments, boolean offline) {
        Map<String, String> env = new HashMap<>(System.getenv());
        for (Map.Entry<String, ?> e : arguments.entrySet()) {
            if (e.getKey().startsWith("HF_") && e.getValue() != null) {
                env.put(e.getKey(), e.getValue().toString());
            }
        }
        HubConfig config = HubConfig.fromEnvironment(env);
        return new HubClient(offline ? config.toBuilder().offline(true).build() : config);
    }

    /**
     * The element type of the computation and the cache: the {@code dtype} argument on a GPU
     * (float32, float16, bfloat16), float32 on the CPU, where {@code dtype} names the form of the projection
     * weights instead ({@link #weightFormat}).
     *
     * @throws IllegalArgumentException for an unknown name, or int8 on a GPU
     */
    static DataType dataType(Map<String, ?> arguments, Device device) {
        WeightFormat format = parsed(arguments);
        if (!device.isGpu() || format == WeightFormat.FLOAT32) {
            return DataType.FLOAT32;
        }
        switch (format) {
            case FLOAT16:
                return DataType.FLOAT16;
            case BFLOAT16:
                return DataType.BFLOAT16;
            default:
                throw new IllegalArgumentException(
                        "dtype " + format.dtypeName() + " is for the CPU (compressed weights), not " + device);
        }
    }

    /**
     * The form of the projection weights: the {@code dtype} argument on the CPU (float32, bfloat16,
     * float16, int8, int4, q4_k), float32 on a GPU, which computes in {@link #dataType}.
     *
     * @throws IllegalArgumentException for an unknown name
     */
    static WeightFormat weightFormat(Map<String, ?> arguments, Device device) {
        WeightFormat format = parsed(arguments);
        return device.isGpu() ? WeightFormat.FLOAT32 : format;
    }

    /**
     * Whether a family whose activations exceed float16's range (Gemma 2, 3) computes in float16 when
     * {@code dtype} asks for it: only with the argument {@code allowFloat16Overflow=true}.
     *
     * @throws IllegalArgumentException for a value other than true or false
     */
    static Float16Overflow float16Overflow(Map<String, ?> arguments) {
        String allow = string(arguments, ALLOW_FLOAT16_OVERFLOW);
        if (allow == null || allow.equalsIgnoreCase("false")) {
            return Float16Overflow.GUARD;
        }
        if (allow.equalsIgnoreCase("true")) {
            return Float16Overflow.ALLOW;
        }
        throw new IllegalArgumentException(ALLOW_FLOAT16_OVERFLOW + " must be true or false, not '" + allow + "'");
    }

    /**
     * The element type of the KV cache: the {@code kvCacheDtype} argument (float32 or float16), or
     * {@code null} for the compute type.
     *
     * @throws IllegalArgumentException naming the argument for another value
     */
    static KvCacheDtype kvCacheDtype(Map<String, ?> arguments) {
        String dtype = string(arguments, KvCacheDtype.ARGUMENT);
        return dtype == null ? null : KvCacheDtype.parse(dtype, KvCacheDtype.ARGUMENT);
    }

    private static WeightFormat parsed(Map<String, ?> arguments) {
        String dtype = string(arguments, "dtype");
        return dtype == null ? WeightFormat.FLOAT32 : WeightFormat.parse(dtype);
    }
}
