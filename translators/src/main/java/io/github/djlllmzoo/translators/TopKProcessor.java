package io.github.djlllmzoo.translators;

/**
 * Keeps the {@code k} most likely tokens: every logit below the {@code k}-th largest becomes
 * -infinity (tokens tied with the {@code k}-th are kept, as in Hugging Face).
 */
public final class TopKProcessor implements LogitsProcessor {

    private final int k;

    /** @param k tokens to keep (≥ 1) */
    public TopKProcessor(int k) {
        if (k < 1) {
            throw new IllegalArgumentException("topK (top_k) must be at least 1 here, got " + k);
        }
        this.k = k;
    }

    @Override
    public void process(long[] context, int length, float[] logits) {
        int finite = 0;
        for (float x : logits) {
            if (Float.isFinite(x)) {
                finite++;
            }
        }
        if (k >= finite) {
            return;
        }
        int[] top = LogitRanking.mostLikely(logits, k);
        float threshold = logits[top[k - 1]];
        for (int i = 0; i < logits.length; i++) {
            if (logits[i] < threshold) {
                logits[i] = Float.NEGATIVE_INFINITY;
            }
        }
    }
}
