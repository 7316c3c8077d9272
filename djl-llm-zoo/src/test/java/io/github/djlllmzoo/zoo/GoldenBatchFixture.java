package io.github.djlllmzoo.zoo;

import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.translators.ContinuousBatch;
import io.github.djlllmzoo.translators.ContinuousBatchBuilder;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.SequenceState;

/**
 * A golden case's checkpoint loaded for a {@link ContinuousBatch}'s tests ({@link
 * ContinuousBatchPassTimerTest}, {@link ContinuousBatchPrefillRowsTest}): its block, a manager for
 * the batch, prompts cut from the golden prompt and the sequences that generate from them.
 */
final class GoldenBatchFixture implements AutoCloseable {

    private final GoldenCase golden;
    private final LocalModel model;
    private final NDManager manager;

    private GoldenBatchFixture(GoldenCase golden, LocalModel model) {
        this.golden = golden;
        this.model = model;
        this.manager = model.model().getNDManager().newSubManager();
    }

    /**
     * @param name the golden case
     * @return its checkpoint loaded, to close after the test
     * @throws Exception if the case or its checkpoint cannot be read
     */
    static GoldenBatchFixture load(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        return new GoldenBatchFixture(golden, LocalModel.load(golden.dir()));
    }

    /** @return the model's block */
    CausalLmBlock block() {
        return model.block();
    }

    /** @return a builder of a batch of the model's block on this fixture's manager */
    ContinuousBatchBuilder batch() {
        return ContinuousBatch.builder(model.block(), manager);
    }

    /** @return the manager the batches and generators of the test use */
    NDManager manager() {
        return manager;
    }

    /**
     * @param length the prompt's tokens
     * @param offset where in the golden prompt it starts
     * @return {@code length} tokens of the golden prompt from {@code offset}, repeated where short
     */
    long[] prompt(int length, int offset) {
        long[] ids = golden.promptIds();
        long[] prompt = new long[length];
        for (int t = 0; t < length; t++) {
            prompt[t] = ids[(t + offset) % ids.length];
        }
        return prompt;
    }

    /**
     * @param prompt the sequence's prompt
     * @param config how it generates
     * @return one sequence, within the model's context window
     */
    SequenceState state(long[] prompt, GenerationConfig config) {
        return SequenceState.builder(prompt, config)
                .contextWindow(model.block().config().maxPositions())
                .build()
                .get(0);
    }

    @Override
    public void close() {
        try {
            manager.close();
        } finally {
            model.close();
        }
    }
}
