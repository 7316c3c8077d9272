package io.github.djlllmzoo.zoo;

import ai.djl.Device;
import ai.djl.ndarray.types.DataType;
import ai.djl.repository.zoo.Criteria;
import io.github.djlllmzoo.zoo.hub.HubClient;
import io.github.djlllmzoo.zoo.hub.HubConfig;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The arguments this zoo's loaders read, whichever way DJL hands them over (Criteria options and
 * arguments, or the query of a model URL): {@code model}, {@code revision}, {@code dtype} and the
 * Hugging Face hub variables ({@code HF_ENDPOINT}, {@code HF_HUB_CACHE}, {@code HF_TOKEN}, {@code
 * HF_HUB_OFFLINE}, ...), which override the process environment for one load.
 */
final class ZooArguments {

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
     * The element type of weights and cache: the {@code dtype} argument, float32 by default.
     *
     * @throws IllegalArgumentException for an unknown name, or bfloat16 on the CPU
     */
    static DataType dataType(Map<String, ?> arguments, Device device) {
        String dtype = string(arguments, "dtype");
        if (dtype == null) {
            return DataType.FLOAT32;
        }
        switch (dtype.toLowerCase(Locale.ROOT)) {
            case "float32":
            case "fp32":
                return DataType.FLOAT32;
            case "float16":
            case "fp16":
                return DataType.FLOAT16;
            case "bfloat16":
            case "bf16":
                if (!device.isGpu()) {
                    throw new IllegalArgumentException(
                            "dtype bfloat16 needs a GPU: DJL 0.35.1's PyTorch engine cannot hold bfloat16 on CPU");
                }
                return DataType.BFLOAT16;
            default:
                throw new IllegalArgumentException(
                        "dtype must be float32, float16 or bfloat16, not '" + dtype + "'");
        }
    }
}
