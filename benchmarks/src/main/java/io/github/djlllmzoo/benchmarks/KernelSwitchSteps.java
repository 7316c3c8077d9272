package io.github.djlllmzoo.benchmarks;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.DecoderModels;
import io.github.djlllmzoo.blocks.Kernels;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;

/**
 * Batch-1 decode steps of a model shape with random weights, alternating step by step between
 * kernel variants in one process, each variant the CPU kernels made with some switches set to
 * {@code false}: on a machine whose speed drifts by tens of percent between runs (other virtual
 * machines on the host), steps taken side by side still compare to about a percent. Every step is
 * at the same position (the cache is truncated back after it). Prints each variant's median, 25th
 * and 10th percentile step time.
 *
 * <p>Usage: {@code java -cp "$(cat cli/target/llmzoo.classpath)"
 * io.github.djlllmzoo.benchmarks.KernelSwitchSteps SHAPE DTYPE STEPS VARIANT...}, each {@code
 * VARIANT} a comma-separated list of switches (system properties) to turn off, or {@code -} for
 * none; e.g. {@code llama-110m int8 1000 llmzoo.gatedProduct,llmzoo.residualProduct -}. Run it as
 * {@code bin/llmzoo} runs Java ({@code -Dai.djl.pytorch.num_threads=1}). With {@code
 * -Dllmzoo.switchSteps.prompt=N} each timed pass is instead the prefill of an N-token prompt into
 * the emptied cache.
 */
public final class KernelSwitchSteps {

    /** Tokens in the cache before each step. */
    private static final int POSITION = 64;

    /** Untimed rounds first. */
    private static final int WARMUP = 50;

    /** Tokens of a timed prefill, or 0 to time decode steps. */
    private static final int PROMPT = Integer.getInteger("llmzoo.switchSteps.prompt", 0);

    private KernelSwitchSteps() {}

    /**
     * @param args shape, dtype, steps per variant, variants
     * @throws Exception if the shape's config cannot be written or parsed
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: KernelSwitchSteps SHAPE DTYPE STEPS VARIANT... (VARIANT: switches to turn off, or -)");
            System.exit(2);
        }
        ModelShape shape = ModelShape.of(args[0]);
        WeightFormat format = WeightFormat.valueOf(args[1].toUpperCase(Locale.ROOT));
        int steps = Integer.parseInt(args[2]);
        String[] variants = Arrays.copyOfRange(args, 3, args.length);
        Engine engine = Engine.getEngine("PyTorch");
        engine.setRandomSeed(1);
        Path dir = Files.createTempDirectory("kernel-switch-steps");
        CausalLmBlock model = DecoderModels.create(RandomCheckpoint.writeConfig(shape, dir));
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            model.initialize(manager, DataType.FLOAT32, new Shape(1, 1));
            if (format != WeightFormat.FLOAT32) {
                model.compressWeights(format);
            }
            Kernels[] kernels = new Kernels[variants.length];
            for (int v = 0; v < variants.length; v++) {
                String[] off = variants[v].equals("-") ? new String[0] : variants[v].split(",");
                for (String property : off) {
                    System.setProperty(property, "false");
                }
                kernels[v] = Kernels.forModel(engine, Device.cpu(), DataType.FLOAT32);
                for (String property : off) {
                    System.clearProperty(property);
                }
            }
            long[][] nanos = new long[variants.length][steps];
            int start = PROMPT > 0 ? 0 : POSITION; // the cache's tokens before each timed pass
            long[] input = PROMPT > 0 ? new long[PROMPT] : new long[] {464};
            Arrays.setAll(input, i -> input.length == 1 ? 464 : 100 + i);
            try (KvCache cache = model.newCache(manager, 1, start + input.length)) {
                model.useKernels(kernels[0]);
                if (start > 0) {
                    try (NDManager prefill = manager.newSubManager()) {
                        long[] ids = new long[start];
                        Arrays.setAll(ids, i -> 100 + i);
                        model.forward(null, prefill.create(ids, new Shape(1, start)), null, null, cache, true, false);
                    }
                }
                for (int round = -WARMUP; round < steps; round++) {
                    for (int i = 0; i < variants.length; i++) {
                        int v = (i + Math.floorMod(round, variants.length)) % variants.length; // rotate the order
                        model.useKernels(kernels[v]);
                        NDManager step = manager.newSubManager();
                        long began = System.nanoTime();
                        model.forward(null, step.create(input, new Shape(1, input.length)), null, null, cache, true,
                                        false)
                                .argMax(-1)
                                .toLongArray();
                        long time = System.nanoTime() - began;
                        kernels[v].closeStep(step);
                        cache.truncate(start);
                        if (round >= 0) {
                            nanos[v][round] = time;
                        }
                    }
                }
            }
            for (int v = 0; v < variants.length; v++) {
                long[] sorted = nanos[v].clone();
                Arrays.sort(sorted);
                System.out.printf(Locale.ROOT, "%s %s off [%s]: median %.1f us, p25 %.1f, p10 %.1f (%d steps)%n",
                        shape.label(), args[1], variants[v], sorted[steps / 2] / 1e3, sorted[steps / 4] / 1e3,
                        sorted[steps / 10] / 1e3, steps);
            }
        } finally {
            Files.deleteIfExists(dir.resolve(CheckpointFiles.CONFIG));
            Files.deleteIfExists(dir);
        }
    }
}
