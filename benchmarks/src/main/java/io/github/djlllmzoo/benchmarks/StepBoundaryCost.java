package io.github.djlllmzoo.benchmarks;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.BaseNDManager;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.Embedding;
import io.github.djlllmzoo.blocks.Kernels;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.LlamaModel;
import io.github.djlllmzoo.blocks.RotaryEmbedding;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;

/**
 * What each call at a one-row decode step's boundary costs where it runs, right after a step has
 * streamed the weights past the caches (on its own, hot, each is several times cheaper): the ids'
 * and the positions' {@code create}, the embedding row, the rotary factors (from Java rows as a
 * decode step takes them, and {@code -Dllmzoo.rope.decodeRows=false}'s gather, alternated step by
 * step), and the greedy pick ({@link Kernels#argMax} and the engine's {@code argMax} with its copy
 * out). Each step times one of them after its forward pass; prints each one's median and 10th
 * percentile, then how many arrays a step leaves in its manager. A Llama-family shape (the rotary
 * embedding is {@link LlamaModel}'s).
 *
 * <p>Usage: {@code java -Dai.djl.pytorch.num_threads=1 -cp "$(cat cli/target/llmzoo.classpath)"
 * io.github.djlllmzoo.benchmarks.StepBoundaryCost SHAPE DTYPE STEPS}, e.g. {@code tinyllama-1.1b int4
 * 300}.
 */
public final class StepBoundaryCost {

    private static final String[] CALLS = {
        "create the ids (1, 1)", "create the positions (1, 1)", "embedding row", "rotary factors (Java rows)",
        "rotary factors (gather)", "Kernels.argMax", "engine argMax and copy out"
    };

    private static final int POSITION = 64;

    private StepBoundaryCost() {}

    /**
     * @param args shape, dtype, steps per call
     * @throws Exception if the shape's config cannot be written or parsed
     */
    public static void main(String[] args) throws Exception {
        ModelShape shape = ModelShape.of(args[0]);
        WeightFormat format = WeightFormat.valueOf(args[1].toUpperCase(Locale.ROOT));
        int steps = Integer.parseInt(args[2]);
        Engine.getEngine("PyTorch").setRandomSeed(1);
        Path dir = Files.createTempDirectory("step-boundary-cost");
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            CausalLmBlock model = KernelSwitchSteps.randomModel(shape, format, dir, manager);
            if (!(model instanceof LlamaModel llama)) {
                throw new IllegalArgumentException(args[0] + " is not a Llama-family shape");
            }
            Embedding embedding = null;
            for (Block child : model.getChildren().values()) {
                embedding = child instanceof Embedding e ? e : embedding;
            }
            RotaryEmbedding rope = llama.rotaryEmbedding();
            Kernels kernels = model.kernels();
            long[][] nanos = new long[CALLS.length][steps];
            int arrays = 0;
            try (KvCache cache = model.newCache(manager, 1, POSITION + 1)) {
                try (NDManager prefill = manager.newSubManager()) {
                    long[] ids = new long[POSITION];
                    Arrays.setAll(ids, i -> 100 + i);
                    model.forward(null, prefill.create(ids, new Shape(1, POSITION)), null, null, cache, true, false);
                }
                for (int round = -20; round < steps; round++) {
                    for (int c = 0; c < CALLS.length; c++) {
                        NDManager step = manager.newSubManager();
                        NDArray logits = model.forward(
                                null, step.create(new long[] {464}, new Shape(1, 1)), null, null, cache, true, false);
                        arrays = count(step);
                        NDArray ids = step.create(new long[] {464}, new Shape(1, 1));
                        NDArray positions = step.create(new long[] {POSITION}, new Shape(1, 1));
                        if (c == 4) {
                            System.setProperty(RotaryEmbedding.DECODE_ROWS_PROPERTY, "false");
                        }
                        long start = System.nanoTime();
                        switch (c) {
                            case 0 -> step.create(new long[] {464}, new Shape(1, 1));
                            case 1 -> step.create(new long[] {POSITION}, new Shape(1, 1));
                            case 2 -> embedding.forward(null, ids, false);
                            case 3, 4 -> rope.cosSin(positions, manager, DataType.FLOAT32);
                            case 5 -> kernels.argMax(logits);
                            default -> {
                                try (NDArray picked = logits.argMax(-1)) {
                                    picked.toLongArray();
                                }
                            }
                        }
                        long time = System.nanoTime() - start;
                        System.clearProperty(RotaryEmbedding.DECODE_ROWS_PROPERTY);
                        kernels.closeStep(step);
                        cache.truncate(POSITION);
                        if (round >= 0) {
                            nanos[c][round] = time;
                        }
                    }
                }
            }
            System.out.printf(Locale.ROOT, "%s %s, one row, %s: each call after a step's forward pass%n",
                    shape.label(), args[1], kernels);
            for (int c = 0; c < CALLS.length; c++) {
                long[] sorted = nanos[c].clone();
                Arrays.sort(sorted);
                System.out.printf(Locale.ROOT, "%s: median %.1f us, p10 %.1f%n", CALLS[c], sorted[steps / 2] / 1e3,
                        sorted[steps / 10] / 1e3);
            }
            System.out.printf(Locale.ROOT, "arrays a step leaves in its manager: %d (%d layers)%n", arrays,
                    model.config().numLayers());
        } finally {
            Files.deleteIfExists(dir.resolve(CheckpointFiles.CONFIG));
            Files.deleteIfExists(dir);
        }
    }

    /** The arrays a manager and its sub-managers hold (DJL keeps them in a map it does not expose). */
    private static int count(NDManager manager) throws ReflectiveOperationException {
        Field resources = BaseNDManager.class.getDeclaredField("resources");
        resources.setAccessible(true);
        int n = 0;
        for (Object held : ((Map<?, ?>) resources.get(manager)).values()) {
            n += held instanceof NDManager sub ? count(sub) : 1;
        }
        return n;
    }
}
