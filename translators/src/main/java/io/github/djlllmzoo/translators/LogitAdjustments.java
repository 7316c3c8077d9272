package io.github.djlllmzoo.translators;

import java.io.Serializable;
import java.util.Map;

/**
 * OpenAI's additive adjustments of the next-token logits, applied before temperature and
 * filtering: a fixed bias per token ({@code logit_bias}), and penalties on tokens already generated
 * ({@code presence_penalty} once a token has occurred, {@code frequency_penalty} per occurrence):
 * {@code logit[j] += bias[j] - count[j] * frequencyPenalty - (count[j] > 0 ? presencePenalty :
 * 0)}, where {@code count[j]} counts token {@code j} in the new tokens (not the prompt).
 *
 * @param logitBias a bias per token id, each in [-100, 100] (-100 in effect bans the token, 100
 *     all but forces it)
 * @param presencePenalty subtracted once from the logit of every token generated so far, in [-2,
 *     2]
 * @param frequencyPenalty subtracted per occurrence from the logit of every token generated so
 *     far, in [-2, 2]
 */
public record LogitAdjustments(
        Map<Integer, Float> logitBias, float presencePenalty, float frequencyPenalty)
        implements Serializable {

    private static final long serialVersionUID = 1L;

    /** No adjustment. */
    public static final LogitAdjustments NONE = new LogitAdjustments(Map.of(), 0f, 0f);

    /** OpenAI's bound on a bias. */
    public static final float MAX_BIAS = 100f;

    /** OpenAI's bound on either penalty. */
    public static final float MAX_PENALTY = 2f;

    /**
     * Validates the values; every message names the field at fault.
     *
     * @param logitBias a bias per token id, each in [-100, 100] (-100 in effect bans the token, 100
     *     all but forces it)
     * @param presencePenalty subtracted once from the logit of every token generated so far, in [-2,
     *     2]
     * @param frequencyPenalty subtracted per occurrence from the logit of every token generated so
     *     far, in [-2, 2]
     */
    public LogitAdjustments {
        logitBias = Map.copyOf(logitBias);
        for (Map.Entry<Integer, Float> e : logitBias.entrySet()) {
            if (e.getKey() < 0 || !(Math.abs(e.getValue()) <= MAX_BIAS)) {
                throw new IllegalArgumentException(
                        "logitBias (logit_bias) maps token ids >= 0 to biases in [-100, 100], got "
                                + e.getKey()
                                + " -> "
                                + e.getValue());
            }
        }
        requirePenalty("presencePenalty (presence_penalty)", presencePenalty);
        requirePenalty("frequencyPenalty (frequency_penalty)", frequencyPenalty);
    }

    private static void requirePenalty(String field, float value) {
        if (!(Math.abs(value) <= MAX_PENALTY)) {
            throw new IllegalArgumentException(field + " must be in [-2, 2], got " + value);
        }
    }

    /** @return whether nothing is adjusted */
    public boolean isNone() {
        return logitBias.isEmpty() && presencePenalty == 0f && frequencyPenalty == 0f;
    }
}
