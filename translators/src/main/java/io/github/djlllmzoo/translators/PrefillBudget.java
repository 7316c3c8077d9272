package io.github.djlllmzoo.translators;

import io.github.djlllmzoo.blocks.SlotPrefill;
import java.util.Arrays;

/**
 * How many of a joining chunk's layers one step of a {@link ContinuousBatch} runs: all of them where
 * no sequence decodes, else the step's budget, in tokens through every layer or, under {@link
 * ContinuousBatch#PREFILL_AS_LONG_AS_DECODE}, as long as the recent decode passes took.
 */
final class PrefillBudget {

    /** Decode passes whose median time bounds a step's prefill under {@link ContinuousBatch#PREFILL_AS_LONG_AS_DECODE}. */
    private static final int RECENT_DECODE_PASSES = 16;

    private final int stepTokens;
    private final int layers;
    /**
     * The recent decode passes' times, whose median is the budget under {@link
     * ContinuousBatch#PREFILL_AS_LONG_AS_DECODE}: with the last pass alone, one slow pass (a
     * machine's hiccup) doubled the next step's prefill as well.
     */
    private final long[] recentDecodeNanos = new long[RECENT_DECODE_PASSES];
    private int decodePasses;

    /**
     * @param stepTokens the batch's {@code prefillStepTokens}
     * @param layers the model's layer count
     */
    PrefillBudget(int stepTokens, int layers) {
        this.stepTokens = stepTokens;
        this.layers = layers;
    }

    /** Counts a decode pass's time toward the median. */
    void decodePassTook(long nanos) {
        recentDecodeNanos[decodePasses++ % RECENT_DECODE_PASSES] = nanos;
    }

    /**
     * Runs the pass's layers this step may.
     *
     * @param pass the chunk's pass, not done
     * @param decoding whether sequences decode this step
     * @param start when the step's prefill work started ({@link System#nanoTime})
     * @return the layers run
     */
    int run(SlotPrefill pass, boolean decoding, long start) {
        int before = pass.remainingLayers();
        if (!decoding) {
            pass.run(pass.remainingLayers()); // no running row to keep waiting
        } else if (stepTokens == ContinuousBatch.PREFILL_AS_LONG_AS_DECODE) {
            long budget = decodePassMedian();
            do {
                pass.run(1);
            } while (!pass.done() && System.nanoTime() - start < budget);
        } else {
            pass.run((int) Math.max(1, Math.min(layers, (long) layers * stepTokens / pass.tokens())));
        }
        return before - pass.remainingLayers();
    }

    /** The median of the recent decode passes' times (0 before the first: one layer runs then). */
    private long decodePassMedian() {
        int n = Math.min(decodePasses, RECENT_DECODE_PASSES);
        if (n == 0) {
            return 0;
        }
        long[] sorted = Arrays.copyOf(recentDecodeNanos, n);
        Arrays.sort(sorted);
        return sorted[n / 2];
    }
}
