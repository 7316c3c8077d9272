package io.github.djlllmzoo.zoo;

import java.util.Map;
import java.util.Properties;

/**
 * The DJL settings the library applies itself, before DJL's engine starts, each unless the
 * environment or a system property of the same name already says either way:
 *
 * <ul>
 *   <li>{@code OPT_OUT_TRACKING=true}: when it starts, DJL's engine otherwise asks the EC2
 *       instance-metadata address 169.254.169.254, waiting up to a second for each of its requests
 *       where nothing answers, and on EC2 sends a telemetry request.
 *   <li>{@code RUST_FLAVOR=cpu}: DJL's Hugging Face tokenizers run on the CPU whatever the machine,
 *       but where they see CUDA they look for a CUDA build of their native library, which their jar
 *       does not hold, and download it (failing offline: "Failed to load Huggingface native
 *       library"); this makes them take the CPU build their jar carries. DJL reads it with {@code
 *       Utils.getEnvOrSystemProperty} when the first tokenizer loads.
 * </ul>
 *
 * The zoo, the repository factory for {@code file://} and {@code djl://} model URLs
 * and {@link LocalModel} apply it when their classes load; code that starts DJL's engine before it
 * touches any of them (e.g. {@code NDManager.newBaseManager()}) should call {@link #apply()} first,
 * or set the variable in the environment.
 *
 * <p>Settings that only take effect from the environment of the process, or that would change the
 * engine for every model of the JVM, are left to the application (docs/java-api.md, "In a service").
 */
public final class EngineDefaults {

    /** DJL's switch (environment variable or system property) for its start-up telemetry. */
    public static final String OPT_OUT_TRACKING = "OPT_OUT_TRACKING";

    /**
     * The build of its native library DJL's Hugging Face tokenizers load ({@code cpu}, or a CUDA
     * flavor such as {@code cu124}), environment variable or system property.
     */
    public static final String RUST_FLAVOR = "RUST_FLAVOR";

    /** Each setting and the value this library gives it when nobody chose. */
    private static final Map<String, String> DEFAULTS = Map.of(OPT_OUT_TRACKING, "true", RUST_FLAVOR, "cpu");

    private EngineDefaults() {}

    /** Sets each default as a system property unless it or the variable of the same name is set. */
    public static void apply() {
        apply(System.getenv(), System.getProperties());
    }

    static void apply(Map<String, String> env, Properties properties) {
        synchronized (properties) {
            for (Map.Entry<String, String> setting : DEFAULTS.entrySet()) {
                String key = setting.getKey();
                if (env.get(key) == null && properties.getProperty(key) == null) {
                    properties.setProperty(key, setting.getValue());
                }
            }
        }
    }
}
