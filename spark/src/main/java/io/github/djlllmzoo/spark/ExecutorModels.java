package io.github.djlllmzoo.spark;

import io.github.djlllmzoo.zoo.LocalModel;
import io.github.djlllmzoo.zoo.ModelReference;
import io.github.djlllmzoo.zoo.hub.HubClient;
import java.io.UncheckedIOException;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The models of this JVM (a Spark executor, or the driver in local mode): each {@link ModelSpec}
 * is loaded once, the first time a task asks for it, and shared by every task the JVM runs
 * (generation over a loaded model is safe from many threads). All are closed when the JVM shuts
 * down, as executors live for the whole application.
 */
public final class ExecutorModels {

    private static final Map<ModelSpec, LocalModel> MODELS = new ConcurrentHashMap<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(ExecutorModels::closeAll, "llmzoo-spark-models-close"));
    }

    private ExecutorModels() {}

    /**
     * The loaded model of a spec, loading it on first use (resolving the reference through the zoo:
     * the Hugging Face cache of this machine, downloading unless {@code HF_HUB_OFFLINE} is set).
     *
     * @param spec the model
     * @return the shared model; callers must not close it
     * @throws IllegalStateException naming the model if it cannot be loaded
     */
    public static LocalModel get(ModelSpec spec) {
        return MODELS.computeIfAbsent(spec, ExecutorModels::load);
    }

    private static LocalModel load(ModelSpec spec) {
        try {
            return LocalModel.load(
                    ModelReference.resolve(spec.reference(), null, HubClient.fromEnvironment()),
                    spec.djlDevice(),
                    spec.dataType());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot load model " + spec.reference() + ": " + e.getMessage(), e);
        } catch (Exception e) {
            throw new IllegalStateException("cannot load model " + spec.reference() + ": " + e.getMessage(), e);
        }
    }

    private static void closeAll() {
        MODELS.values().forEach(LocalModel::close);
        MODELS.clear();
    }
}
