package io.github.djlllmzoo.translators;

import java.util.BitSet;

/**
 * Hugging Face's repetition penalty (CTRL, Keskar et al. 2019): every token that already occurs in
 * the prompt or the output has its logit divided by the penalty when positive and multiplied by it
 * when negative, once however often it occurs. A penalty above 1 discourages repetition.
 */
public final class RepetitionPenaltyProcessor implements LogitsProcessor {

    private final float penalty;

    /** @param penalty the penalty (> 0; 1 changes nothing) */
    public RepetitionPenaltyProcessor(float penalty) {
        if (!(penalty > 0) || Float.isInfinite(penalty)) {
            throw new IllegalArgumentException(
                    "repetitionPenalty (repetition_penalty) must be > 0, got " + penalty);
        }
        this.penalty = penalty;
    }

    @Override
    public void process(long[] context, int length, float[] logits) {
        BitSet seen = new BitSet(logits.length);
        for (int i = 0; i < length; i++) {
            int id = Math.toIntExact(context[i]);
            if (id < 0 || id >= logits.length || seen.get(id)) {
                continue;
            }
            seen.set(id);
            float x = logits[id];
            logits[id] = x < 0 ? x * penalty : x / penalty;
        }
    }
}
