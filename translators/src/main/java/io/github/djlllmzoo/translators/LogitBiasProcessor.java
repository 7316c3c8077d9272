package io.github.djlllmzoo.translators;

import java.util.Map;

/**
 * OpenAI's {@code logit_bias}: adds a fixed bias to the logits of given tokens at every step. Ids
 * beyond the vocabulary are ignored (the server refuses them first).
 */
public final class LogitBiasProcessor implements LogitsProcessor {

    private final int[] ids;
    private final float[] biases;

    /** @param logitBias the bias of each token id */
    public LogitBiasProcessor(Map<Integer, Float> logitBias) {
        ids = new int[logitBias.size()];
        biases = new float[logitBias.size()];
        int i = 0;
        for (Map.Entry<Integer, Float> e : logitBias.entrySet()) {
            ids[i] = e.getKey();
            biases[i++] = e.getValue();
        }
    }

    @Override
    public void process(long[] context, int length, float[] logits) {
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < logits.length) {
                logits[ids[i]] += biases[i];
            }
        }
    }
}
