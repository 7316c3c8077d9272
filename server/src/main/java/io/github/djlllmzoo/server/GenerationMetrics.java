package io.github.djlllmzoo.server;

import io.github.djlllmzoo.translators.PassTimer;
import java.util.concurrent.atomic.LongAdder;

/**
 * The timings and token counts a {@link GenerationScheduler} measures of its jobs, beside the
 * counters of {@link GenerationScheduler.Stats}: what {@code /metrics} shows as histograms.
 */
final class GenerationMetrics implements PassTimer {

    // Buckets, in seconds, spanning what a CPU server sees: a first token within milliseconds
    // (a tiny model, an idle server) up to minutes (a long queue of long prompts); a decode step of
    // a millisecond (a tiny model) up to seconds (a 7B model at a large batch); whole requests of up
    // to the default request timeout (10 minutes).
    private static final double[] FIRST_TOKEN_BOUNDS = {
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320
    };
    private static final double[] PER_TOKEN_BOUNDS = {
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5
    };
    // A forward pass of the decode loop: a decode pass of a millisecond (a tiny model) to seconds,
    // finer where a small model's passes fall (2-20 ms), so a pass twice its usual time shows.
    private static final double[] PASS_BOUNDS = {
        0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01, 0.012, 0.014, 0.016, 0.02, 0.025, 0.03, 0.04,
        0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5
    };
    private static final double[] DURATION_BOUNDS = {
        0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640
    };

    /** From admission to the job's first generated token. */
    final Histogram timeToFirstToken = new Histogram(FIRST_TOKEN_BOUNDS);

    /** After the first token, the time per further token of a completed job. */
    final Histogram timePerOutputToken = new Histogram(PER_TOKEN_BOUNDS);

    /** From admission to the last token of a completed job. */
    final Histogram requestDuration = new Histogram(DURATION_BOUNDS);

    /** The decode loop's decode passes in a step that ran no prefill layers. */
    final Histogram decodePass = new Histogram(PASS_BOUNDS);

    /** The decode loop's decode passes right after prefill layers in the same step. */
    final Histogram decodePassAfterPrefill = new Histogram(PASS_BOUNDS);

    /** The decode loop's prefill work of a step (some or all layers of a prompt chunk's pass). */
    final Histogram prefillStep = new Histogram(PASS_BOUNDS);

    /** Prompt tokens of the admitted jobs. */
    final LongAdder promptTokens = new LongAdder();

    private static final double NANOS_PER_SECOND = 1e9;

    /**
     * A job's first token.
     *
     * @param submittedNanos when it was admitted ({@link System#nanoTime()})
     * @param firstTokenNanos when its first token came
     */
    void firstToken(long submittedNanos, long firstTokenNanos) {
        timeToFirstToken.observe((firstTokenNanos - submittedNanos) / NANOS_PER_SECOND);
    }

    /**
     * A job that completed.
     *
     * @param submittedNanos when it was admitted
     * @param firstTokenNanos when its first token came (0 if none)
     * @param lastTokenNanos when its last token came
     * @param steps the tokens of its longest sequence (the decode steps it took)
     */
    void completed(long submittedNanos, long firstTokenNanos, long lastTokenNanos, int steps) {
        requestDuration.observe((lastTokenNanos - submittedNanos) / NANOS_PER_SECOND);
        if (steps >= 2 && firstTokenNanos != 0) {
            timePerOutputToken.observe(
                    (lastTokenNanos - firstTokenNanos) / NANOS_PER_SECOND / (steps - 1));
        }
    }

    @Override
    public void decodePass(int rows, long nanos, boolean afterPrefill) {
        (afterPrefill ? decodePassAfterPrefill : decodePass).observe(nanos / NANOS_PER_SECOND);
    }

    @Override
    public void prefillLayers(int tokens, int layers, long nanos) {
        prefillStep.observe(nanos / NANOS_PER_SECOND);
    }
}
