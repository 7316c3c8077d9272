package io.github.djlllmzoo.benchmarks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.constrained.CompiledConstraint;
import io.github.djlllmzoo.constrained.ConstraintState;
import io.github.djlllmzoo.constrained.OutputConstraint;
import io.github.djlllmzoo.constrained.TokenVocabulary;
import io.github.djlllmzoo.translators.Sampler;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The cost of constrained decoding: decode steps that sample at temperature 1 from the model's
 * logits, with and without an output constraint masking them first (and advancing on the token
 * drawn), the rest of the step identical; and the time to compile a constraint. A row whose
 * constrained output is complete starts a new one, so every timed step is a constrained step.
 */
public final class ConstrainedDecodeBenchmark {

    private final CausalLmBlock model;
    private final NDManager manager;
    private final TokenVocabulary vocabulary;
    private final List<Integer> eosTokenIds;

    /**
     * @param model the model, its parameters loaded
     * @param manager a manager on the model's device; steps use sub-managers of it
     * @param vocabulary the tokenizer's vocabulary
     * @param eosTokenIds the tokens that end an output
     */
    public ConstrainedDecodeBenchmark(
            CausalLmBlock model, NDManager manager, TokenVocabulary vocabulary, List<Integer> eosTokenIds) {
        this.model = model;
        this.manager = manager;
        this.vocabulary = vocabulary;
        this.eosTokenIds = List.copyOf(eosTokenIds);
    }

    /**
     * Times {@code steps} decode steps after a prefill of {@code prompts}.
     *
     * @param constraint the constraint, or {@code null} for unconstrained sampling
     * @param prompts one row of token ids per sequence, all of the same length
     * @param steps decode steps to time
     * @param seed the samplers' seed
     * @return each step's milliseconds (forward, logits to Java, mask, sample, accept)
     */
    public double[] stepMillis(OutputConstraint constraint, long[][] prompts, int steps, long seed) {
        int batch = prompts.length;
        int length = prompts[0].length;
        int vocab = model.config().vocabSize();
        CompiledConstraint compiled = constraint == null ? null : vocabulary.compile(constraint);
        List<ConstraintState> states = new ArrayList<>();
        for (int r = 0; r < batch && compiled != null; r++) {
            states.add(compiled.newState(eosTokenIds));
        }
        List<Sampler> samplers = Sampler.seeded(seed, batch);
        long[] flat = new long[batch * length];
        for (int i = 0; i < batch; i++) {
            System.arraycopy(prompts[i], 0, flat, i * length, length);
        }
        double[] millis = new double[steps];
        try (KvCache cache = model.newCache(manager, batch, length + steps + 1)) {
            float[] logits = forward(flat, new Shape(batch, length), cache);
            long[] next = new long[batch];
            for (int s = 0; s <= steps; s++) {
                long start = System.nanoTime();
                if (s > 0) {
                    logits = forward(next, new Shape(batch, 1), cache);
                }
                for (int r = 0; r < batch; r++) {
                    float[] row = Arrays.copyOfRange(logits, r * vocab, (r + 1) * vocab);
                    if (compiled != null) {
                        ConstraintState state = states.get(r);
                        if (state.isFinished()) {
                            state = compiled.newState(eosTokenIds);
                            states.set(r, state);
                        }
                        state.mask(row);
                    }
                    int token = samplers.get(r).sample(row);
                    if (compiled != null) {
                        if (eosTokenIds.contains(token)) {
                            states.set(r, compiled.newState(eosTokenIds));
                        } else {
                            states.get(r).accept(token);
                        }
                    }
                    next[r] = token;
                }
                if (s > 0) {
                    millis[s - 1] = (System.nanoTime() - start) / 1e6;
                }
            }
        }
        return millis;
    }

    /**
     * The time to compile a constraint until it can mask the first step: the grammar, then the
     * start state's allowed tokens (one walk of the vocabulary), without any cache.
     *
     * @param constraint the constraint
     * @return milliseconds
     */
    public double compileMillis(OutputConstraint constraint) {
        long start = System.nanoTime();
        CompiledConstraint compiled = CompiledConstraint.compile(constraint, vocabulary);
        compiled.newState(eosTokenIds).allowedTokens();
        return (System.nanoTime() - start) / 1e6;
    }

    private float[] forward(long[] ids, Shape shape, KvCache cache) {
        NDManager step = manager.newSubManager();
        try {
            NDArray input = step.create(ids, shape);
            NDArray logits = model.forward(null, input, null, null, cache, true, false); // (B, 1, V)
            return logits.toType(DataType.FLOAT32, false).toFloatArray();
        } finally {
            model.kernels().closeStep(step);
        }
    }
}
