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
    /** The last prefill work's time per token and layer, or 0 before any. */
    private double nanosPerTokenLayer;

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

    /** Counts a step's prefill work: {@code layers} layers of a pass of {@code tokens} tokens. */
    void prefillTook(int tokens, int layers, long nanos) {
        if (tokens > 0 && layers > 0) {
            nanosPerTokenLayer = (double) nanos / ((double) tokens * layers);
        }
    }

    /**
     * How many whole chunks the next pass may take, at most {@code max}. While sequences decode
     * under {@link ContinuousBatch#PREFILL_AS_LONG_AS_DECODE}, as many as keep one of the pass's
     * layers within the recent decode passes' median (at least one chunk): a step runs at least one
     * layer, so a wider layer would hold the running streams past their budget (on Llama-110M int8, a
     * 256-token pass's layer took about twice a decode pass, and the streams' p99 time between tokens
     * went from about 3x to 5x their median while a prompt joined). The estimate is the last prefill
     * work's time per token and layer, which a wider pass only lowers (its fixed costs shared by more
     * tokens), so the width grows pass by pass toward the budget. Elsewhere {@code max}.
     *
     * @param max the most chunks a pass takes
     * @param chunk tokens a chunk
     * @param decoding whether sequences decode
     * @return the chunks the next pass takes
     */
    int passChunks(int max, int chunk, boolean decoding) {
        if (!decoding || stepTokens != ContinuousBatch.PREFILL_AS_LONG_AS_DECODE || max == 1) {
            return max;
        }
        long budget = decodePassMedian();
        if (budget == 0 || nanosPerTokenLayer == 0) {
            return 1;
        }
        return (int) Math.max(1, Math.min(max, budget / (nanosPerTokenLayer * chunk)));
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
