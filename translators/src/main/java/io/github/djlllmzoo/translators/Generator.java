package io.github.djlllmzoo.translators;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import java.util.List;

/**
 * Runs a {@link CausalLmBlock} on one sequence: greedy generation (through {@link
 * BatchGenerator}), next-token logits with a {@link KvCache}, and scoring. Every array a step makes
 * lives in a manager scoped to that step, so generation does not leak native memory. Safe to use
 * from many threads at once over one model: each call has its own cache.
 */
public final class Generator {

    private final CausalLmBlock model;
    private final NDManager manager;

    /**
     * @param model the model block, its parameters loaded
     * @param manager a manager on the model's device (the model's manager); steps use sub-managers
     */
    public Generator(CausalLmBlock model, NDManager manager) {
        this.model = model;
        this.manager = manager;
    }

    /** @return the model block */
    public CausalLmBlock model() {
        return model;
    }

    /**
     * Generates greedily (the most likely token at each step) until an EOS token, the token budget
     * or the context window.
     *
     * @param prompt the prompt token ids (at least one)
     * @param config budget, EOS tokens and repetition penalty; its sampling settings are ignored
     * @return the new tokens and why generation ended
     */
    public GeneratedSequence generateGreedy(long[] prompt, GenerationConfig config) {
        GenerationConfig greedy = config.toBuilder().greedy().numReturnSequences(1).build();
        Completion completion =
                new BatchGenerator(model, manager, null)
                        .generate(List.of(GenerationRequest.ofIds(prompt, greedy)), greedy)
                        .get(0)
                        .completions()
                        .get(0);
        return new GeneratedSequence(completion.tokenIds(), completion.finishReason());
    }

    /**
     * The logits for the token after {@code input}, extending {@code cache} with it.
     *
     * @param input new tokens of one sequence
     * @param cache the sequence's cache
     * @return the logits over the vocabulary
     */
    public float[] nextLogits(long[] input, KvCache cache) {
        NDManager step = manager.newSubManager();
        try {
            NDArray ids = step.create(input, new Shape(1, input.length));
            NDArray logits = model.forward(null, ids, null, null, cache, true, false); // (1, 1, V)
            return logits.toType(DataType.FLOAT32, false).toFloatArray();
        } finally {
            model.kernels().closeStep(step);
        }
    }

    /**
     * Scores a sequence: the natural-log probability of each token given the ones before it, from
     * one forward pass without a cache.
     *
     * @param ids the token ids (at least one)
     * @return {@code ids.length - 1} log-probabilities; entry {@code i} is for {@code ids[i + 1]}
     */
    public float[] scoreTokens(long[] ids) {
        validatePrompt(model.config(), ids);
        try (NDManager step = manager.newSubManager()) {
            NDArray input = step.create(ids, new Shape(1, ids.length));
            NDArray logits = model.forward(null, input, null, null, null, false, false); // (1, T, V)
            NDArray logProbs = logits.toType(DataType.FLOAT32, false).logSoftmax(-1).get(0); // (T, V)
            float[] out = new float[ids.length - 1];
            for (int i = 0; i + 1 < ids.length; i++) {
                out[i] = logProbs.getFloat(i, ids[i + 1]);
            }
            return out;
        }
    }

    /**
     * Checks a prompt: at least one token, every id in the vocabulary, within the context window.
     *
     * @param config the model config
     * @param ids the token ids
     * @throws IllegalArgumentException naming the fault
     */
    static void validatePrompt(DecoderConfig config, long[] ids) {
        if (ids.length == 0) {
            throw new IllegalArgumentException(
                    "the prompt has no tokens and the model has no BOS token (bos_token_id) to start from");
        }
        int vocab = config.vocabSize();
        for (long id : ids) {
            if (id < 0 || id >= vocab) {
                throw new IllegalArgumentException(
                        "token id " + id + " is outside the model's vocabulary of " + vocab);
            }
        }
        if (ids.length > config.maxPositions()) {
            throw new IllegalArgumentException(
                    "prompt of " + ids.length + " tokens exceeds the model's context window of "
                            + config.maxPositions());
        }
    }
}
