package io.github.djlllmzoo.benchmarks;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Decode steps (or, with {@code -Dllmzoo.switchSteps.prefill=T}, prefills of T tokens) of a model
 * shape with random weights, alternating step by step between kernel variants in one process, each
 * variant the CPU kernels made with some kernels turned off (names of {@code -Dllmzoo.cpu.off}) or,
 * written {@code name=value}, a system property set to that value (when its kernels are made and around each
 * of its steps, for the blocks that read one at each pass: {@code llmzoo.rope.decodeRows=false}): on a machine whose speed drifts by tens of percent between runs
 * (other virtual machines on the host), steps taken side by side still compare to about a percent.
 * Every step is at the same position (the cache is truncated back after it; a prefill starts from an
 * empty cache). Prints each variant's median, 25th and 10th percentile step time. With {@code
 * -Dllmzoo.switchSteps.run=N} each variant takes N steps in a row and only the last is timed, so a
 * variant whose step leaves work for the next (the workers free a finished step's arrays during the
 * next one) is timed after a step of its own.
 *
 * <p>Usage: {@code java -cp "$(cat cli/target/llmzoo.classpath)"
 * io.github.djlllmzoo.benchmarks.KernelSwitchSteps SHAPE DTYPE STEPS VARIANT...} (batch 1, or {@code
 * -Dllmzoo.switchSteps.batch=N} sequences a step), each {@code
 * VARIANT} a comma-separated list of kernels to turn off (and properties to set), or {@code -} for
 * none; e.g. {@code llama-110m int8 1000 gatedProduct,residualProduct -}. The instruction set is the
 * process's: run it once with {@code -Dllmzoo.cpu.isa=avx2} to measure the AVX2 variant. Run it as
 * {@code bin/llmzoo} runs Java ({@code -Dai.djl.pytorch.num_threads=1}).
 */
public final class KernelSwitchSteps {

    /** cpu-kernels' list of native kernels turned off ({@code -Dllmzoo.cpu.off}). */
    private static final String OFF = "llmzoo.cpu.off";

    /** Tokens in the cache before each step. */
    private static final int POSITION = 64;

    /** Tokens of a timed prefill instead of a decode step; 0: decode steps. */
    private static final int PREFILL = Integer.getInteger("llmzoo.switchSteps.prefill", 0);

    /** Untimed rounds first (a prefill's round takes as long as a hundred decode steps). */
    private static final int WARMUP = PREFILL > 0 ? 5 : 50;

    /** Steps a variant takes in a row, the last of them timed. */
    private static final int RUN = Math.max(1, Integer.getInteger("llmzoo.switchSteps.run", 1));

    /** Sequences in each step. */
    private static final int BATCH = Integer.getInteger("llmzoo.switchSteps.batch", 1);

    private KernelSwitchSteps() {}

    /**
     * A model of {@code shape} with random weights (the engine's seed set first), held as {@code format}.
     *
     * @param shape the model shape
     * @param format the weight format
     * @param dir where its config is written
     * @param manager the manager of its parameters
     * @return the model
     * @throws Exception if the config cannot be written or parsed
     */
    static CausalLmBlock randomModel(ModelShape shape, WeightFormat format, Path dir, NDManager manager)
            throws Exception {
        CausalLmBlock model = DecoderModels.create(RandomCheckpoint.writeConfig(shape, dir));
        model.initialize(manager, DataType.FLOAT32, new Shape(1, 1));
        if (format != WeightFormat.FLOAT32) {
            model.compressWeights(format);
        }
        return model;
    }

    /**
     * @param args shape, dtype, steps per variant, variants
     * @throws Exception if the shape's config cannot be written or parsed
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: KernelSwitchSteps SHAPE DTYPE STEPS VARIANT... (VARIANT: kernels to turn off, or -)");
            System.exit(2);
        }
        ModelShape shape = ModelShape.of(args[0]);
        WeightFormat format = WeightFormat.valueOf(args[1].toUpperCase(Locale.ROOT));
        int steps = Integer.parseInt(args[2]);
        String[] variants = Arrays.copyOfRange(args, 3, args.length);
        Engine engine = Engine.getEngine("PyTorch");
        engine.setRandomSeed(1);
        Path dir = Files.createTempDirectory("kernel-switch-steps");
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            CausalLmBlock model = randomModel(shape, format, dir, manager);
            Kernels[] kernels = new Kernels[variants.length];
            List<List<String[]>> properties = new ArrayList<>(); // each variant's name=value entries
            for (int v = 0; v < variants.length; v++) {
                properties.add(new ArrayList<>());
                String[] entries = variants[v].equals("-") ? new String[0] : variants[v].split(",");
                List<String> off = new ArrayList<>();
                for (String entry : entries) {
                    int is = entry.indexOf('=');
                    if (is < 0) {
                        off.add(entry);
                    } else {
                        System.setProperty(entry.substring(0, is), entry.substring(is + 1));
                        properties.get(v).add(new String[] {entry.substring(0, is), entry.substring(is + 1)});
                    }
                }
                System.setProperty(OFF, String.join(",", off));
                kernels[v] = Kernels.forModel(engine, Device.cpu(), DataType.FLOAT32);
                System.clearProperty(OFF);
                for (String entry : entries) {
                    int is = entry.indexOf('=');
                    if (is >= 0) {
                        System.clearProperty(entry.substring(0, is));
                    }
                }
            }
            long[][] nanos = new long[variants.length][steps];
            long[] prompt = new long[BATCH * PREFILL];
            Arrays.setAll(prompt, i -> 100 + 7 * (i % Math.max(PREFILL, 1)));
            try (KvCache cache = model.newCache(manager, BATCH, Math.max(POSITION + 1, PREFILL))) {
                model.useKernels(kernels[0]);
                try (NDManager prefill = manager.newSubManager()) {
                    long[] ids = new long[BATCH * POSITION];
                    Arrays.setAll(ids, i -> 100 + i % POSITION);
                    model.forward(null, prefill.create(ids, new Shape(BATCH, POSITION)), null, null, cache, true, false);
                }
                for (int round = -WARMUP; round < steps; round++) {
                    for (int i = 0; i < variants.length; i++) {
                        int v = (i + Math.floorMod(round, variants.length)) % variants.length; // rotate the order
                        model.useKernels(kernels[v]);
                        // set again for the variant's steps: the model's own blocks read some at each pass
                        properties.get(v).forEach(p -> System.setProperty(p[0], p[1]));
                        for (int untimed = 1; untimed < RUN && PREFILL == 0; untimed++) {
                            NDManager step = manager.newSubManager();
                            long[] ids = new long[BATCH];
                            Arrays.fill(ids, 464);
                            kernels[v].argMax(model.forward(
                                    null, step.create(ids, new Shape(BATCH, 1)), null, null, cache, true, false));
                            kernels[v].closeStep(step);
                            cache.truncate(POSITION);
                        }
                        NDManager step = manager.newSubManager();
                        if (PREFILL > 0) {
                            cache.truncate(0);
                        }
                        long[] next = new long[BATCH];
                        Arrays.fill(next, 464);
                        long start = System.nanoTime();
                        NDArray input = PREFILL > 0
                                ? step.create(prompt, new Shape(BATCH, PREFILL))
                                : step.create(next, new Shape(BATCH, 1));
                        kernels[v].argMax(model.forward(null, input, null, null, cache, true, false));
                        long time = System.nanoTime() - start;
                        kernels[v].closeStep(step);
                        cache.truncate(POSITION);
                        properties.get(v).forEach(p -> System.clearProperty(p[0]));
                        if (round >= 0) {
                            nanos[v][round] = time;
                        }
                    }
                }
            }
            for (int v = 0; v < variants.length; v++) {
                long[] sorted = nanos[v].clone();
                Arrays.sort(sorted);
                System.out.printf(Locale.ROOT, "%s %s batch %d off [%s]: median %.1f us, p25 %.1f, p10 %.1f (%d steps)%n",
                        shape.label(), args[1], BATCH, variants[v], sorted[steps / 2] / 1e3, sorted[steps / 4] / 1e3,
                        sorted[steps / 10] / 1e3, steps);
            }
        } finally {
            Files.deleteIfExists(dir.resolve(CheckpointFiles.CONFIG));
            Files.deleteIfExists(dir);
        }
    }
}
