package io.github.djlllmzoo.translators;

/**
 * Min-p sampling (Nguyen et al. 2024, Hugging Face's {@code MinPLogitsWarper}): drops every token
 * whose probability is below {@code minP} times the probability of the most likely token. The most
 * likely token is always kept.
 */
public final class MinPProcessor implements LogitsProcessor {

    private final float minP;

    /** @param minP the fraction of the top probability a token needs, in (0, 1] */
    public MinPProcessor(float minP) {
        if (!(minP > 0 && minP <= 1)) {
            throw new IllegalArgumentException("minP (min_p) must be in (0, 1] here, got " + minP);
        }
        this.minP = minP;
    }

    @Override
    public void process(long[] context, int length, float[] logits) {
        float max = Float.NEGATIVE_INFINITY;
        for (float x : logits) {
            max = Math.max(max, x);
        }
        if (max == Float.NEGATIVE_INFINITY) {
            return;
        }
        // p_i < minP * p_max  <=>  logit_i - logit_max < ln(minP)
        double threshold = max + Math.log(minP);
        for (int i = 0; i < logits.length; i++) {
            if (logits[i] != max && logits[i] < threshold) {
                logits[i] = Float.NEGATIVE_INFINITY;
            }
        }
    }
}
