package io.github.djlllmzoo.translators;

import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import java.util.Objects;

/**
 * How a {@link ContinuousBatch} is made ({@link ContinuousBatch#builder}); each setter says what it
 * bounds.
 */
public final class ContinuousBatchBuilder {

    /**
     * Chunks one prefill pass takes by default where the model's passes split exactly ({@link
     * #prefillPassChunks}): on Llama-110M int8, a 64-token chunk's pass prefilled 2,087 tokens/s in the
     * decode loop and a 256-token one 3,086, the pass's fixed costs (the GEMM's weight panels) shared
     * by more rows (docs/serving-production.md).
     */
    public static final int PREFILL_PASS_CHUNKS = 4;
    final CausalLmBlock model;
    final NDManager manager;
    int maxRows = 1;
    int prefillRows;
    long tokenBudget;
    int prefillChunk = 64;
    int prefillStepTokens = -1;
    int prefillPassChunks = PREFILL_PASS_CHUNKS;
    long prefixCacheTokens;
    PassTimer timer = PassTimer.NONE;

    ContinuousBatchBuilder(CausalLmBlock model, NDManager manager) {
        this.model = model;
        this.manager = manager;
        this.tokenBudget = model.config().maxPositions();
    }

    /**
     * @param rows the most sequences decoding together (≥ 1)
     * @return this builder
     */
    public ContinuousBatchBuilder maxRows(int rows) {
        this.maxRows = rows;
        return this;
    }

    /**
     * Rows of the pool beside the decode rows where prompts are prefilled ahead: a sequence joins
     * while the batch holds fewer than {@code maxRows + rows} sequences, is prefilled into a row of
     * its own and takes a decode row as soon as one is free, so a row whose sequence ended
     * decodes again at the next step rather than after the next prompt's prefill.
     *
     * @param rows the most sequences beside the decoding ones (≥ 0; 0: a prompt's prefill
     *     starts only once it has a decode row)
     * @return this builder
     */
    public ContinuousBatchBuilder prefillRows(int rows) {
        this.prefillRows = rows;
        return this;
    }

    /**
     * @param tokens the most positions the pool may hold (rows × capacity, ≥ 1)
     * @return this builder
     */
    public ContinuousBatchBuilder tokenBudget(long tokens) {
        this.tokenBudget = tokens;
        return this;
    }

    /**
     * @param tokens the most prompt tokens one prefill pass takes (≥ 1)
     * @return this builder
     */
    public ContinuousBatchBuilder prefillChunk(int tokens) {
        this.prefillChunk = tokens;
        return this;
    }

    /**
     * @param tokens the prefill work one step may do while sequences decode, in tokens through every
     *     layer: a chunk of {@code T} tokens runs {@code max(1, layers × tokens / T)} of its layers a
     *     step; {@code prefillChunk} or more runs a whole chunk a step (the default); {@link
     *     ContinuousBatch#PREFILL_AS_LONG_AS_DECODE} runs layers until the step's prefill took as long
     *     as the recent decode passes' median. A step with no sequence decoding runs a whole chunk
     * @return this builder
     */
    public ContinuousBatchBuilder prefillStepTokens(int tokens) {
        this.prefillStepTokens = tokens;
        return this;
    }

    /**
     * Whole chunks of a prompt one prefill pass may take where the model's prefill splits exactly
     * ({@code Kernels.prefillSplitsExactly}: compressed weights on the CPU kernels, chunks of more than
     * 8 tokens): a pass's fixed costs are then shared by more tokens, while the chunk stays the unit
     * a prefix-cached prompt is reused by, with outputs the same bit for bit. Elsewhere (float32, a
     * LoRA adapter's row) a pass takes one chunk, since other splits would round otherwise.
     *
     * @param chunks the most chunks a pass takes (≥ 1; default {@link #PREFILL_PASS_CHUNKS})
     * @return this builder
     */
    public ContinuousBatchBuilder prefillPassChunks(int chunks) {
        this.prefillPassChunks = chunks;
        return this;
    }

    /**
     * @param tokens the most prompt positions the {@link PrefixCache} keeps (0: none)
     * @return this builder
     */
    public ContinuousBatchBuilder prefixCacheTokens(long tokens) {
        this.prefixCacheTokens = tokens;
        return this;
    }

    /**
     * @param timer told each forward pass's time as it ends (default: none)
     * @return this builder
     */
    public ContinuousBatchBuilder passTimer(PassTimer timer) {
        this.timer = Objects.requireNonNull(timer, "timer");
        return this;
    }

    /** @return the batch */
    public ContinuousBatch build() {
        if (prefillStepTokens == -1) {
            prefillStepTokens = prefillChunk;
        }
        return new ContinuousBatch(this);
    }
}
