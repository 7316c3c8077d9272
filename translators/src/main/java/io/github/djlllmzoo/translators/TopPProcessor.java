package io.github.djlllmzoo.translators;

import java.util.Arrays;

/**
 * Nucleus sampling (Holtzman et al. 2019): keeps the smallest set of most likely tokens whose total
 * probability reaches {@code p}, that is every token whose more likely tokens together hold less
 * than {@code p}. The most likely token is always kept.
 */
public final class TopPProcessor implements LogitsProcessor {

    private final float p;

    /** @param p the nucleus probability, in (0, 1] */
    public TopPProcessor(float p) {
        if (!(p > 0 && p <= 1)) {
            throw new IllegalArgumentException("topP (top_p) must be in (0, 1], got " + p);
        }
        this.p = p;
    }

    @Override
    public void process(long[] context, int length, float[] logits) {
        if (p >= 1f) {
            return;
        }
        int[] order = descendingFinite(logits);
        if (order.length == 0) {
            return;
        }
        double max = logits[order[0]];
        double total = 0;
        for (int id : order) {
            total += Math.exp(logits[id] - max);
        }
        double above = 0;
        int keep = 0;
        while (keep < order.length && above < p) {
            above += Math.exp(logits[order[keep]] - max) / total;
            keep++;
        }
        for (int i = keep; i < order.length; i++) {
            logits[order[i]] = Float.NEGATIVE_INFINITY;
        }
    }

    /**
     * Indices of the finite logits, most likely first (ties by index).
     *
     * @param logits the logits
     * @return the indices in descending order of logit
     */
    static int[] descendingFinite(float[] logits) {
        long[] keys = new long[logits.length];
        int n = 0;
        for (int i = 0; i < logits.length; i++) {
            if (Float.isFinite(logits[i])) {
                // the negated value's bits, made to sort like the float, above the index
                int bits = Float.floatToIntBits(-logits[i] + 0f);
                bits ^= (bits >> 31) & 0x7fffffff;
                keys[n++] = ((long) bits << 32) | i;
            }
        }
        Arrays.sort(keys, 0, n);
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = (int) keys[i];
        }
        return order;
    }
}
