package io.github.djlllmzoo.translators;

/**
 * What a {@link ContinuousBatch}'s driving thread counts as its steps run (tokens and the time each
 * part of a step took), published as {@link StepCounters} that other threads may read.
 */
final class StepTally {

    private long steps;
    private long prefillTokens;
    private long prefillNanos;
    private long decodeTokens;
    private long decodeNanos;
    private long sampleNanos;
    private long poolNanos;
    private long prefixNanos;
    private volatile StepCounters published = StepCounters.NONE;

    /** Counts one step taken. */
    void step() {
        steps++;
    }

    /**
     * @param tokens prompt tokens whose pass ended (0 while a pass's layers are spread over steps)
     * @param nanos time the pass's layers took
     */
    void prefill(int tokens, long nanos) {
        prefillTokens += tokens;
        prefillNanos += nanos;
    }

    /**
     * @param tokens tokens decoded (one per running row)
     * @param nanos time the decode pass took
     */
    void decode(int tokens, long nanos) {
        decodeTokens += tokens;
        decodeNanos += nanos;
    }

    /** @param start {@link System#nanoTime()} when turning logits into a token began */
    void sampledSince(long start) {
        sampleNanos += System.nanoTime() - start;
    }

    /** @param start {@link System#nanoTime()} when the KV pool's allocation or row move began */
    void poolSince(long start) {
        poolNanos += System.nanoTime() - start;
    }

    /** @param start {@link System#nanoTime()} when the prefix cache's restore or store began */
    void prefixSince(long start) {
        prefixNanos += System.nanoTime() - start;
    }

    /** Publishes what was counted so far to {@link #counters}. */
    void publish() {
        published = new StepCounters(
                steps, prefillTokens, prefillNanos, decodeTokens, decodeNanos, sampleNanos, poolNanos, prefixNanos);
    }

    /** @return the counters as last published; readable from any thread */
    StepCounters counters() {
        return published;
    }
}
