package io.github.djlllmzoo.translators;

/**
 * Told the time of each forward pass a {@link ContinuousBatch} runs, as it ends, on the thread that
 * steps the batch: a server's {@code /metrics} histograms of decode passes and prefill work, so a
 * slow pass (the decode pass of a step that also ran prefill layers, say) shows beside the sums of
 * {@link StepCounters}. Implementations must be quick and must not throw.
 */
public interface PassTimer {

    /** Told nothing. */
    PassTimer NONE = new PassTimer() {
        @Override
        public void decodePass(int rows, long nanos, boolean afterPrefill) {}

        @Override
        public void prefillLayers(int tokens, int layers, long nanos) {}
    };

    /**
     * A decode pass ended.
     *
     * @param rows the rows it decoded, one token each
     * @param nanos its time, the logits copied out included
     * @param afterPrefill whether the same step ran prefill layers just before it
     */
    void decodePass(int rows, long nanos, boolean afterPrefill);

    /**
     * A step's prefill work ended: some layers of a prompt chunk's pass (all of them where the step
     * ran a whole chunk).
     *
     * @param tokens the chunk's tokens
     * @param layers the layers the step ran
     * @param nanos their time, the pass's start and its logits copied out included where the step
     *     did them
     */
    void prefillLayers(int tokens, int layers, long nanos);
}
