package io.github.djlllmzoo.examples;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.types.DataType;
import ai.djl.repository.zoo.ModelNotFoundException;
import io.github.djlllmzoo.zoo.LocalModel;
import io.github.djlllmzoo.zoo.ModelReference;
import io.github.djlllmzoo.zoo.hub.HubClient;
import java.io.IOException;
import java.nio.file.Path;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** The options every command that loads a model shares. */
final class ModelOptions {

    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    @Option(
            names = "--model",
            paramLabel = "M",
            description = "A registry name (see 'llmzoo models'), a Hugging Face id (org/name) or a checkpoint directory "
                    + "(default: the project's story model in models/default).")
    String model;

    @Option(names = "--device", defaultValue = "cpu", paramLabel = "cpu|gpu", description = "Where to run (default: ${DEFAULT-VALUE}).")
    String device;

    private Path directory;

    /**
     * The checkpoint directory of {@code --model}, downloading into the Hugging Face cache when it
     * names a hub model that is not cached yet; without {@code --model}, the {@link DefaultModel}.
     */
    Path directory() throws IOException, ModelNotFoundException {
        if (directory == null) {
            directory = model == null ? DefaultModel.directory() : ModelReference.resolve(model, null, HubClient.fromEnvironment());
        }
        return directory;
    }

    LocalModel load() throws Exception {
        return LocalModel.load(directory(), device(spec, device), DataType.FLOAT32);
    }

    /**
     * Parses a {@code --device} value.
     *
     * @param spec the command, for the usage error
     * @param device "cpu" or "gpu"
     * @return the device
     */
    static Device device(CommandSpec spec, String device) {
        switch (device) {
            case "cpu":
                return Device.cpu();
            case "gpu":
                if (Engine.getEngine("PyTorch").getGpuCount() == 0) {
                    throw new ParameterException(
                            spec.commandLine(), "--device gpu: DJL's PyTorch engine sees no GPU");
                }
                return Device.gpu();
            default:
                throw new ParameterException(
                        spec.commandLine(), "--device must be cpu or gpu, not '" + device + "'");
        }
    }
}
