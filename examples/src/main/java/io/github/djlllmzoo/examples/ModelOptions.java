package io.github.djlllmzoo.examples;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** The options every command that loads a model shares. */
final class ModelOptions {

    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    @Option(names = "--model", required = true, paramLabel = "DIR", description = "Checkpoint directory in Hugging Face layout.")
    Path model;

    @Option(names = "--device", defaultValue = "cpu", paramLabel = "cpu|gpu", description = "Where to run (default: ${DEFAULT-VALUE}).")
    String device;

    LocalModel load() throws Exception {
        return LocalModel.load(model, device(spec, device), DataType.FLOAT32);
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
