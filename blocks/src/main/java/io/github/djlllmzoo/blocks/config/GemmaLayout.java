package io.github.djlllmzoo.blocks.config;

/**
 * What the Gemma families change in the Llama layout besides the GELU-tanh MLP ({@link
 * HiddenActivation#GELU_TANH}), as Hugging Face's {@code modeling_gemma.py}, {@code
 * modeling_gemma2.py} and {@code modeling_gemma3.py} compute it. Every Gemma scales the token
 * embeddings by {@code sqrt(hidden_size)} and normalizes with {@code x * (1 + weight)} RMSNorms.
 *
 * @param queryPreAttnScalar {@code query_pre_attn_scalar}: attention scores are scaled by its
 *     inverse square root ({@code head_dim} for Gemma 1)
 * @param attnLogitSoftcapping {@code attn_logit_softcapping} C: scores become {@code tanh(s / C) *
 *     C} before the mask; 0 for none
 * @param finalLogitSoftcapping {@code final_logit_softcapping}: the same capping on the LM head's
 *     logits; 0 for none
 * @param sandwichNorms whether each sublayer's output is normed too ({@code post_attention_layernorm}
 *     after attention, {@code pre_feedforward_layernorm} / {@code post_feedforward_layernorm} around
 *     the MLP; Gemma 2 and 3), rather than Llama's {@code post_attention_layernorm} before the MLP
 * @param localRopeTheta {@code rope_local_base_freq}, the rotary base of the sliding-window layers
 *     (unscaled; Gemma 3), or 0 when every layer uses {@code rope_theta}
 */
public record GemmaLayout(
        double queryPreAttnScalar,
        float attnLogitSoftcapping,
        float finalLogitSoftcapping,
        boolean sandwichNorms,
        double localRopeTheta) {

    /**
     * Validates the values.
     *
     * @param queryPreAttnScalar {@code query_pre_attn_scalar}: attention scores are scaled by its inverse square root ({@code head_dim} for Gemma 1)
     * @param attnLogitSoftcapping {@code attn_logit_softcapping} C: scores become {@code tanh(s / C) * C} before the mask; 0 for none
     * @param finalLogitSoftcapping {@code final_logit_softcapping}: the same capping on the LM head's logits; 0 for none
     * @param sandwichNorms whether each sublayer's output is normed too ({@code post_attention_layernorm} after attention, {@code pre_feedforward_layernorm} / {@code post_feedforward_layernorm} around the MLP; Gemma 2 and 3), rather than Llama's {@code post_attention_layernorm} before the MLP
     * @param localRopeTheta {@code rope_local_base_freq}, the rotary base of the sliding-window layers (unscaled; Gemma 3), or 0 when every layer uses {@code rope_theta}
     */
    public GemmaLayout {
        if (!(queryPreAttnScalar > 0)) {
            throw new IllegalArgumentException("query_pre_attn_scalar must be positive, got " + queryPreAttnScalar);
        }
        if (!(attnLogitSoftcapping >= 0) || !(finalLogitSoftcapping >= 0) || !(localRopeTheta >= 0)) {
            throw new IllegalArgumentException("soft-capping values and rope_local_base_freq must be positive, or 0 for none");
        }
    }
}
