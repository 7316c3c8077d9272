package io.github.djlllmzoo.translators;

import java.util.HashMap;
import java.util.Map;

/**
 * OpenAI's {@code presence_penalty} and {@code frequency_penalty}: every token the sequence has
 * generated so far (the prompt not counted) has {@code count * frequencyPenalty + presencePenalty}
 * subtracted from its logit. Negative penalties encourage repetition.
 */
public final class OccurrencePenaltyProcessor implements LogitsProcessor {

    private final float presencePenalty;
    private final float frequencyPenalty;
    private final int promptLength;

    /**
     * @param presencePenalty subtracted once from each generated token's logit
     * @param frequencyPenalty subtracted per occurrence
     * @param promptLength where the generated tokens start in the context
     */
    public OccurrencePenaltyProcessor(
            float presencePenalty, float frequencyPenalty, int promptLength) {
        this.presencePenalty = presencePenalty;
        this.frequencyPenalty = frequencyPenalty;
        this.promptLength = promptLength;
    }

    @Override
    public void process(long[] context, int length, float[] logits) {
        Map<Integer, Integer> counts = new HashMap<>();
        for (int i = promptLength; i < length; i++) {
            counts.merge(Math.toIntExact(context[i]), 1, Integer::sum);
        }
        for (Map.Entry<Integer, Integer> e : counts.entrySet()) {
            int id = e.getKey();
            if (id >= 0 && id < logits.length) {
                logits[id] -= e.getValue() * frequencyPenalty + presencePenalty;
            }
        }
    }
}
