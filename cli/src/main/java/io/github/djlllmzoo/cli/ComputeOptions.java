package io.github.djlllmzoo.cli;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.types.DataType;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** Where a model runs and the element type of its weights and KV cache: {@code --device}, {@code --dtype}. */
final class ComputeOptions {

    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    @Option(names = "--device", defaultValue = "cpu", paramLabel = "cpu|gpu", description = "Where to run (default: ${DEFAULT-VALUE}).")
    String device;

    @Option(
            names = "--dtype",
            defaultValue = "float32",
            paramLabel = "float32|float16",
            description = "Element type of weights and KV cache (default: ${DEFAULT-VALUE}); float16 needs --device gpu.")
    String dtype;

    /**
     * @return the device, checked against what DJL's PyTorch engine sees
     * @throws ParameterException for an unknown device, or {@code gpu} when the engine sees none
     */
    Device device() {
        return parseDevice(spec, device);
    }

    /**
     * Parses a {@code --device} value for commands that take it without this mixin.
     *
     * @param spec the command, for the usage error
     * @param device "cpu" or "gpu"
     * @return the device, checked against what DJL's PyTorch engine sees
     * @throws ParameterException for an unknown device, or {@code gpu} when the engine sees none
     */
    static Device parseDevice(CommandSpec spec, String device) {
        switch (device) {
            case "cpu":
                return Device.cpu();
            case "gpu":
                if (Engine.getEngine("PyTorch").getGpuCount() == 0) {
                    throw new ParameterException(
                            spec.commandLine(),
                            "--device gpu: DJL's PyTorch engine sees no GPU (it needs CUDA native"
                                    + " libraries; see the README, section CUDA)");
                }
                return Device.gpu();
            default:
                throw new ParameterException(
                        spec.commandLine(), "--device must be cpu or gpu, not '" + device + "'");
        }
    }

    /**
     * @return the element type
     * @throws ParameterException for an unknown type, float16 without {@code --device gpu}, or
     *     bfloat16, which DJL 0.35.1 cannot hold on any device (refused with its own reason, as
     *     checkpoints and Hugging Face name it)
     */
    DataType dataType() {
        switch (dtype) {
            case "float32":
                return DataType.FLOAT32;
            case "float16":
                requireGpu();
                return DataType.FLOAT16;
            case "bfloat16":
                // DJL 0.35.1's JNI maps no DJL type to torch.bfloat16: creating or casting to it
                // ends in std::terminate, which kills the JVM, on every device.
                throw new ParameterException(
                        spec.commandLine(),
                        "--dtype bfloat16: DJL 0.35.1's PyTorch engine aborts the JVM on bfloat16"
                                + " tensors (its JNI has no bfloat16 mapping); use float32, or float16 with"
                                + " --device gpu (bfloat16 checkpoints load in either)");
            default:
                throw new ParameterException(
                        spec.commandLine(),
                        "--dtype must be float32 or float16, not '" + dtype + "'");
        }
    }

    private void requireGpu() {
        if (!"gpu".equals(device)) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--dtype " + dtype + " is for --device gpu; on the CPU use float32 (the default)");
        }
    }
}
