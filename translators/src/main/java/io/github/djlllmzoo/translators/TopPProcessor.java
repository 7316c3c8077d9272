package io.github.djlllmzoo.translators;

import java.util.Arrays;

/**
 * Nucleus sampling (Holtzman et al. 2019): keeps the smallest set of most likely tokens whose total
 * probability reaches {@code p}, that is every token whose more likely tokens together hold less
 * than {@code p}. The most likely token is always kept.
 *
 * <p>Rather than sorting the whole vocabulary, it ranks the most likely few tokens and widens the
 * candidate set (times 4) only while they hold less than {@code p}.
 */
public final class TopPProcessor implements LogitsProcessor {

    private static final int FIRST_CANDIDATES = 64;

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
        float max = Float.NEGATIVE_INFINITY;
        int finite = 0;
        for (float x : logits) {
            if (Float.isFinite(x)) {
                max = Math.max(max, x);
                finite++;
            }
        }
        if (finite == 0) {
            return;
        }
        double total = 0;
        for (float x : logits) {
            if (Float.isFinite(x)) {
                total += Math.exp(x - max);
            }
        }
        for (int m = Math.min(FIRST_CANDIDATES, finite); ; m = Math.min(finite, m * 4)) {
            int[] order = LogitRanking.mostLikely(logits, m);
            double above = 0;
            int keep = 0;
            while (keep < m && above < p) {
                above += Math.exp(logits[order[keep]] - max) / total;
                keep++;
            }
            if (above >= p || m == finite) {
                float[] kept = new float[keep];
                for (int i = 0; i < keep; i++) {
                    kept[i] = logits[order[i]];
                }
                Arrays.fill(logits, Float.NEGATIVE_INFINITY);
                for (int i = 0; i < keep; i++) {
                    logits[order[i]] = kept[i];
                }
                return;
            }
        }
    }
}
