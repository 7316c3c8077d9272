package io.github.djlllmzoo.benchmarks;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.LoraConfig;
import io.github.djlllmzoo.blocks.LoraWeights;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * What serving several LoRA adapters in one batch costs: greedy decode steps of a batch whose rows
 * all compute with the base model, against the same batch whose rows cycle over {@code n} adapters
 * and the base model ({@link LoraAdapter#selectRows}), and against every row on one adapter (the
 * single-adapter path). The adapters are random (B non-zero), of one rank, over every projection
 * of the model, attached while the benchmark lives and detached when it closes.
 */
public final class MixedAdapterBenchmark implements AutoCloseable {

    /** PEFT's {@code target_modules} as a pattern: every projection of the decoder layers (not the LM head). */
    public static final String EVERY_LAYER_PROJECTION = ".*(layers|h)\\.[0-9]+\\..+";

    private final CausalLmBlock model;
    private final NDManager manager;
    private final List<LoraAdapter> adapters = new ArrayList<>();
    private final List<String> names = new ArrayList<>();

    /**
     * Attaches {@code count} random adapters of rank {@code rank} to every projection of the model.
     *
     * @param model the model, its parameters loaded
     * @param manager a manager on the model's device (the adapters' arrays and the steps' sub-managers)
     * @param dataType the model's type
     * @param count the number of adapters
     * @param rank their rank
     * @param seed the seed of their values
     */
    public MixedAdapterBenchmark(
            CausalLmBlock model, NDManager manager, DataType dataType, int count, int rank, long seed) {
        this.model = model;
        this.manager = manager;
        Engine.getEngine(manager.getEngine().getEngineName()).setRandomSeed((int) seed);
        for (int i = 0; i < count; i++) {
            LoraAdapter adapter = LoraAdapter.declare(
                            model, new LoraConfig(rank, 2f * rank, 0, List.of(), EVERY_LAYER_PROJECTION), false)
                    .initialize(manager, dataType);
            for (LoraWeights pair : adapter.modules().values()) {
                pair.b().getArray().addi(manager.randomNormal(0, 0.02f, pair.bShape(), dataType));
            }
            String name = "bench-adapter-" + i;
            adapters.add(adapter.attach(name));
            names.add(name);
        }
    }

    /** @return the adapters' names */
    public List<String> adapterNames() {
        return Collections.unmodifiableList(names);
    }

    /**
     * Each row's adapter when the rows cycle over the adapters, then the base model ({@code null}).
     *
     * @param batch the number of rows
     * @return the names, {@code null} for the base model
     */
    public List<String> mixedRows(int batch) {
        List<String> rows = new ArrayList<>(batch);
        for (int r = 0; r < batch; r++) {
            int k = r % (names.size() + 1);
            rows.add(k < names.size() ? names.get(k) : null);
        }
        return rows;
    }

    /**
     * Times greedy decode steps after a prefill, every row computing with its adapter.
     *
     * @param rows each row's adapter, {@code null} for the base model
     * @param promptTokens the prompt length (random ids, the same seed for every call)
     * @param steps decode steps to time
     * @param seed the prompts' seed
     * @return each step's milliseconds (forward and the logits read back)
     */
    public double[] stepMillis(List<String> rows, int promptTokens, int steps, long seed) {
        int batch = rows.size();
        int vocab = model.config().vocabSize();
        long[] prompt = new Random(seed).longs((long) batch * promptTokens, 0, vocab).toArray();
        double[] millis = new double[steps];
        try (LoraAdapter.Selection selection = LoraAdapter.selectRows(rows);
                KvCache cache = model.newCache(manager, batch, promptTokens + steps)) {
            float[] logits = forward(prompt, new Shape(batch, promptTokens), cache);
            long[] next = new long[batch];
            for (int s = 0; s < steps; s++) {
                for (int r = 0; r < batch; r++) {
                    next[r] = argmax(logits, r * vocab, vocab);
                }
                long start = System.nanoTime();
                logits = forward(next, new Shape(batch, 1), cache);
                millis[s] = (System.nanoTime() - start) / 1e6;
            }
        }
        return millis;
    }

    private float[] forward(long[] ids, Shape shape, KvCache cache) {
        NDManager step = manager.newSubManager();
        try {
            NDArray logits = model.forward(null, step.create(ids, shape), null, null, cache, true, false); // (B, 1, V)
            return logits.toType(DataType.FLOAT32, false).toFloatArray();
        } finally {
            model.kernels().closeStep(step);
        }
    }

    private static int argmax(float[] logits, int from, int length) {
        int best = 0;
        for (int i = 1; i < length; i++) {
            if (logits[from + i] > logits[from + best]) {
                best = i;
            }
        }
        return best;
    }

    /** Detaches the adapters (their arrays stay with the manager the caller owns). */
    @Override
    public void close() {
        for (int i = 0; i < adapters.size(); i++) {
            adapters.get(i).detach(names.get(i));
        }
    }
}
