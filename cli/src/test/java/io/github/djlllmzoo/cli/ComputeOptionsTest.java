package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Parameter;
import io.github.djlllmzoo.benchmarks.WeightTraffic;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/**
 * What {@code --device} and {@code --dtype} decide, parsed by each command's own command line. The
 * GPU rules are checked with a {@link Device#gpu()} value, which names the device without touching
 * CUDA; the weights they decide are then loaded on the CPU to see the block's type and bytes.
 */
class ComputeOptionsTest {

    private static final Path LLAMA = GoldenCase.dir("llama-gqa");

    /** The {@link ComputeOptions} of a command line, found among the command's (nested) mixins. */
    private static ComputeOptions parse(String... args) {
        CommandLine cli = new CommandLine(new LlmZoo());
        CommandSpec command = cli.parseArgs(args).subcommand().commandSpec();
        List<ComputeOptions> found = new ArrayList<>();
        collect(command, found);
        assertEquals(1, found.size(), String.join(" ", args));
        return found.get(0);
    }

    private static void collect(CommandSpec spec, List<ComputeOptions> found) {
        for (CommandSpec mixin : spec.mixins().values()) {
            if (mixin.userObject() instanceof ComputeOptions options) {
                found.add(options);
            }
            collect(mixin, found);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"generate", "score", "serve", "bench"})
    void float16OnAGpuComputesInFloat16WithDenseWeightsOfThatType(String command) {
        ComputeOptions options = parse(args(command, "--device", "gpu", "--dtype", "float16"));
        assertEquals(DataType.FLOAT16, options.dataType(Device.gpu()));
        assertEquals(WeightFormat.FLOAT32, options.weightFormat(Device.gpu()), "dense arrays of the data type");
        // On the CPU the same option compresses the projection weights and computes in float32.
        assertEquals(DataType.FLOAT32, options.dataType(Device.cpu()));
        assertEquals(WeightFormat.FLOAT16, options.weightFormat(Device.cpu()));
    }

    @ParameterizedTest
    @ValueSource(strings = {"generate", "bench"})
    void bfloat16AndInt8OnAGpuAreUsageErrorsNamingWhy(String command) {
        ParameterException bf16 =
                assertThrows(
                        ParameterException.class,
                        () -> parse(args(command, "--device", "gpu", "--dtype", "bfloat16")).dataType(Device.gpu()));
        assertTrue(bf16.getMessage().contains("aborts the JVM on bfloat16"), bf16.getMessage());
        ParameterException int8 =
                assertThrows(
                        ParameterException.class,
                        () -> parse(args(command, "--device", "gpu", "--dtype", "int8")).dataType(Device.gpu()));
        assertTrue(int8.getMessage().contains("--dtype int8 is for the CPU"), int8.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"generate", "bench"})
    void float16OnAGpuLoadsABlockOfFloat16WeightsOfHalfTheBytes(String command) throws Exception {
        ComputeOptions half = parse(args(command, "--device", "gpu", "--dtype", "float16"));
        ComputeOptions full = parse(args(command, "--device", "gpu", "--dtype", "float32"));
        long halfBytes = residentBytes(half, DataType.FLOAT16);
        long fullBytes = residentBytes(full, DataType.FLOAT32);
        assertEquals(fullBytes, 2 * halfBytes);
    }

    @ParameterizedTest
    @ValueSource(strings = {"generate", "bench"})
    void gemma2InFloat16OnAGpuComputesInFloat32UnlessForced(String command) throws Exception {
        Path gemma2 = GoldenCase.dir("gemma2-softcap-window");
        ComputeOptions guarded = parse(args(command, "--device", "gpu", "--dtype", "float16"));
        ComputeOptions forced =
                parse(args(command, "--device", "gpu", "--dtype", "float16", "--allow-float16-overflow"));
        assertEquals(DataType.FLOAT32, loadedType(gemma2, guarded));
        assertEquals(DataType.FLOAT16, loadedType(gemma2, forced));
        assertEquals(DataType.FLOAT16, loadedType(LLAMA, guarded), "other families keep float16");
    }

    /** The data type a checkpoint loads in (on the CPU) as the options decide for a GPU. */
    private static DataType loadedType(Path dir, ComputeOptions options) throws Exception {
        try (Model model = loadAsOnAGpu(dir, options)) {
            return model.getDataType();
        }
    }

    /** Loads the golden Llama on the CPU as the options decide for a GPU; checks every weight's type. */
    private static long residentBytes(ComputeOptions options, DataType expected) throws Exception {
        try (Model model = loadAsOnAGpu(LLAMA, options)) {
            assertEquals(expected, model.getDataType());
            CausalLmBlock block = (CausalLmBlock) model.getBlock();
            assertTrue(block.compressedWeights().isEmpty(), "no compressed weights on a GPU");
            return WeightTraffic.residentBytes(block);
        }
    }

    /**
     * A checkpoint loaded on the CPU with what the options decide for a GPU, every weight checked to
     * be of the model's data type.
     */
    private static Model loadAsOnAGpu(Path dir, ComputeOptions options) throws Exception {
        Model model =
                LocalModel.loadModel(
                        dir,
                        Device.cpu(),
                        options.dataType(Device.gpu()),
                        options.weightFormat(Device.gpu()),
                        options.float16Overflow());
        for (Parameter p : ((CausalLmBlock) model.getBlock()).namedParameters().values()) {
            assertEquals(model.getDataType(), p.getArray().getDataType(), p.getName());
        }
        return model;
    }

    private static String[] args(String command, String... options) {
        List<String> args = new ArrayList<>(List.of(command));
        switch (command) {
            case "bench" -> args.addAll(List.of("--shape", "llama-110m"));
            case "generate" -> args.addAll(List.of("--prompt", "Hi"));
            case "score" -> args.addAll(List.of("--text", "Hi"));
            default -> { }
        }
        args.addAll(List.of(options));
        return args.toArray(new String[0]);
    }
}
