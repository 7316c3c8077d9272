package io.github.djlllmzoo.blocks;

/**
 * How attention turns the products {@code q·k} into logits before the mask: multiplied by {@code
 * scale} (1/sqrt(head_dim), or Gemma's {@code query_pre_attn_scalar^-0.5}), then, where {@code
 * softcap} C is positive, soft-capped to {@code tanh(s / C) * C} (Gemma 2's {@code
 * attn_logit_softcapping}).
 *
 * @param scale the factor on {@code q·k}
 * @param softcap the soft cap C, or 0 for none
 */
public record AttentionScores(double scale, double softcap) {

    /**
     * Validates the values.
     *
     * @param scale the factor on {@code q·k}
     * @param softcap the soft cap C, or 0 for none
     */
    public AttentionScores {
        if (!(scale > 0) || !(softcap >= 0)) {
            throw new IllegalArgumentException(
                    "attention scale must be positive and soft cap non-negative, got " + scale + ", " + softcap);
        }
    }

    /**
     * The usual scores: {@code q·k / sqrt(headDim)}, uncapped.
     *
     * @param headDim the head width
     * @return the scores
     */
    public static AttentionScores standard(long headDim) {
        return new AttentionScores(1.0 / Math.sqrt(headDim), 0);
    }

    /** @return whether the scores are soft-capped */
    public boolean capped() {
        return softcap > 0;
    }
}
