package io.github.djlllmzoo.benchmarks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KvCache;
import java.util.Arrays;

/**
 * Times greedy generation with a {@link KvCache} the way a generator runs it: one prefill forward
 * over the prompts (logits of the last position only), then one forward per new token, each step's
 * arrays in their own scoped manager (ended by the kernels' {@code closeStep}, as the generators do) and the
 * next tokens taken by the engine's argmax.
 */
public final class DecodeBenchmark {

    /**
     * One timed generation.
     *
     * @param prefillSeconds the prefill forward, prompts to first new tokens
     * @param decodeSeconds every decode step after the prefill
     * @param decodeSteps the number of decode steps
     * @param firstRowIds the tokens generated for the first sequence
     */
    public record Run(double prefillSeconds, double decodeSeconds, int decodeSteps, long[] firstRowIds) {}

    private final CausalLmBlock model;
    private final NDManager manager;

    /**
     * @param model the model, its parameters loaded
     * @param manager a manager on the model's device; steps use sub-managers of it
     */
    public DecodeBenchmark(CausalLmBlock model, NDManager manager) {
        this.model = model;
        this.manager = manager;
    }

    /**
     * Generates {@code newTokens} tokens per sequence: the first from the prefill, the rest from
     * {@code newTokens - 1} decode steps.
     *
     * @param prompts one row of token ids per sequence, all of the same length
     * @param newTokens tokens to generate per sequence (at least 1)
     * @param stepMillis if not {@code null}, receives each decode step's milliseconds at the index
     *     of the position it feeds
     * @return the timings
     */
    public Run generate(long[][] prompts, int newTokens, double[] stepMillis) {
        int batch = prompts.length;
        int length = prompts[0].length;
        long[] flat = new long[batch * length];
        for (int i = 0; i < batch; i++) {
            System.arraycopy(prompts[i], 0, flat, i * length, length);
        }
        long[] firstRow = new long[newTokens];
        try (KvCache cache = model.newCache(manager, batch, length + newTokens)) {
            long start = System.nanoTime();
            long[] next = step(flat, new Shape(batch, length), cache);
            double prefill = (System.nanoTime() - start) / 1e9;
            firstRow[0] = next[0];
            long decodeStart = System.nanoTime();
            for (int i = 1; i < newTokens; i++) {
                int position = cache.length();
                long stepStart = System.nanoTime();
                next = step(next, new Shape(batch, 1), cache);
                if (stepMillis != null) {
                    stepMillis[position] = (System.nanoTime() - stepStart) / 1e6;
                }
                firstRow[i] = next[0];
            }
            double decode = (System.nanoTime() - decodeStart) / 1e9;
            return new Run(prefill, decode, newTokens - 1, firstRow);
        }
    }

    private long[] step(long[] ids, Shape shape, KvCache cache) {
        NDManager step = manager.newSubManager();
        try {
            NDArray input = step.create(ids, shape);
            NDArray logits = model.forward(null, input, null, null, cache, true, false); // (B, 1, V)
            return model.kernels().argMax(logits); // B
        } finally {
            model.kernels().closeStep(step);
        }
    }

    /**
     * The median of the entries of {@code values} in {@code [from, to)} that were measured (not
     * NaN).
     *
     * @param values per-position measurements, NaN where none
     * @param from first index
     * @param to end index (exclusive)
     * @return the median, or NaN when none was measured
     */
    public static double windowMedian(double[] values, int from, int to) {
        double[] window =
                Arrays.stream(values, Math.max(0, from), Math.min(values.length, to))
                        .filter(v -> !Double.isNaN(v))
                        .toArray();
        return window.length == 0 ? Double.NaN : StreamingBandwidth.median(window);
    }
}
