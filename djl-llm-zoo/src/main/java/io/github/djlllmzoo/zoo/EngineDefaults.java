package io.github.djlllmzoo.zoo;

import java.util.Map;
import java.util.Properties;

/**
 * The DJL settings the library applies itself, before DJL's engine starts: {@code
 * OPT_OUT_TRACKING=true} (when it starts, DJL's engine otherwise asks the EC2 instance-metadata
 * address 169.254.169.254, waiting up to a second for each of its requests where nothing answers,
 * and on EC2 sends a telemetry request) unless the environment or a system property already
 * says either way. The zoo, the repository factory for {@code file://} and {@code djl://} model URLs
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

    private EngineDefaults() {}

    /** Sets the system property {@code OPT_OUT_TRACKING=true} unless it or the variable is set. */
    public static void apply() {
        apply(System.getenv(), System.getProperties());
    }

    static void apply(Map<String, String> env, Properties properties) {
        synchronized (properties) {
            if (env.get(OPT_OUT_TRACKING) == null && properties.getProperty(OPT_OUT_TRACKING) == null) {
                properties.setProperty(OPT_OUT_TRACKING, "true");
            }
        }
    }
}
