package io.github.djlllmzoo.translators;

/**
 * Where a {@link ContinuousBatch}'s steps spent their time, summed since it was made: the prompt
 * tokens prefilled and the forward passes that did it, the tokens decoded and theirs, the sampling
 * (logits processors, sampler, detokenizer, stop strings, listeners) after both, the KV pool's
 * allocations and the prefix cache's copies. A load run reads them twice and subtracts: prefill
 * against decode shows what the prompts cost, and the rest of the wall time is the scheduler's own.
 *
 * @param steps steps taken
 * @param prefillTokens prompt tokens prefilled (those reused from the prefix cache excluded)
 * @param prefillNanos time in prefill forward passes, logits copied out included
 * @param decodeTokens tokens decoded (one per running row per step)
 * @param decodeNanos time in decode forward passes, logits copied out included
 * @param sampleNanos time turning logits into tokens and text, listeners included
 * @param poolNanos time allocating or growing the KV pool and moving its rows
 * @param prefixNanos time the prefix cache spent restoring and storing prompts' keys and values
 */
public record StepCounters(
        long steps,
        long prefillTokens,
        long prefillNanos,
        long decodeTokens,
        long decodeNanos,
        long sampleNanos,
        long poolNanos,
        long prefixNanos) {

    /** Nothing counted yet. */
    public static final StepCounters NONE = new StepCounters(0, 0, 0, 0, 0, 0, 0, 0);

    /**
     * @param earlier counters read before these
     * @return what was counted between the two reads
     */
    public StepCounters minus(StepCounters earlier) {
        return new StepCounters(
                steps - earlier.steps,
                prefillTokens - earlier.prefillTokens,
                prefillNanos - earlier.prefillNanos,
                decodeTokens - earlier.decodeTokens,
                decodeNanos - earlier.decodeNanos,
                sampleNanos - earlier.sampleNanos,
                poolNanos - earlier.poolNanos,
                prefixNanos - earlier.prefixNanos);
    }

    /** @return the time counted in every phase together */
    public long totalNanos() {
        return prefillNanos + decodeNanos + sampleNanos + poolNanos + prefixNanos;
    }
}
