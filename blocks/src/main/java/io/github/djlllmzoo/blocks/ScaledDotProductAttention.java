package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;

/**
 * {@code softmax(q k^T / sqrt(D) + mask) v}, the attention every attention block computes (the
 * reference that {@link Kernels#attend} implementations agree with), with other {@link
 * AttentionScores} where a family scales or soft-caps the scores its own way. Grouped-query attention is
 * computed without repeating keys and values: the query heads of one group are folded into the
 * query-length axis, so the cache holds only key/value heads.
 */
public final class ScaledDotProductAttention {

    private ScaledDotProductAttention() {}

    /**
     * Attends, in one engine call per step.
     *
     * @param q queries (B, H, T, D); the result is attached to its manager
     * @param k keys (B, H_kv, S, D), H divisible by H_kv
     * @param v values (B, H_kv, S, D)
     * @param mask additive mask broadcastable to (B, 1, T, S), or {@code null}
     * @param dropout dropout rate on the attention probabilities (training only)
     * @param training whether this is a training pass
     * @return the attended values (B, H, T, D)
     */
    public static NDArray attend(
            NDArray q, NDArray k, NDArray v, NDArray mask, float dropout, boolean training) {
        return attend(q, k, v, mask, AttentionScores.standard(q.getShape().get(3)), dropout, training);
    }

    /**
     * Attends with the given scores: {@code softmax(cap(q k^T * scale) + mask) v}.
     *
     * @param q queries (B, H, T, D); the result is attached to its manager
     * @param k keys (B, H_kv, S, D), H divisible by H_kv
     * @param v values (B, H_kv, S, D)
     * @param mask additive mask broadcastable to (B, 1, T, S), or {@code null}
     * @param rule how products become scores
     * @param dropout dropout rate on the attention probabilities (training only)
     * @param training whether this is a training pass
     * @return the attended values (B, H, T, D)
     */
    public static NDArray attend(
            NDArray q,
            NDArray k,
            NDArray v,
            NDArray mask,
            AttentionScores rule,
            float dropout,
            boolean training) {
        long b = q.getShape().get(0);
        long h = q.getShape().get(1);
        long t = q.getShape().get(2);
        long d = q.getShape().get(3);
        long hKv = k.getShape().get(1);
        long s = k.getShape().get(2);
        long groups = h / hKv;

        NDArray grouped = groups == 1 ? q : q.reshape(b, hKv, groups * t, d); // (B, Hkv, G*T, D)
        NDArray scores = scores(grouped, k, rule); // (B, Hkv, G*T, S)
        if (mask != null) {
            if (groups == 1) {
                scores = scores.add(mask); // (B, H, T, S)
            } else {
                NDArray perGroup = scores.reshape(b, hKv, groups, t, s); // (B, Hkv, G, T, S)
                scores = perGroup.add(mask.expandDims(1)).reshape(b, hKv, groups * t, s);
            }
        }
        NDArray probs = scores.softmax(-1);
        if (training && dropout > 0) {
            probs = probs.getNDArrayInternal().dropout(probs, dropout, true).singletonOrThrow();
        }
        NDArray out = probs.matMul(v); // (B, Hkv, G*T, D)
        return groups == 1 ? out : out.reshape(b, h, t, d);
    }

    /**
     * The scores of grouped queries against keys, before the mask: {@code cap(q k^T * scale)}.
     *
     * @param grouped queries (B, H_kv, G*T, D)
     * @param k keys (B, H_kv, S, D)
     * @param rule how the products become scores
     * @return (B, H_kv, G*T, S)
     */
    static NDArray scores(NDArray grouped, NDArray k, AttentionScores rule) {
        return scaled(grouped.matMul(k.transpose(0, 1, 3, 2)), rule, grouped);
    }

    /**
     * Products of queries and keys made scores: {@code cap(products * scale)}.
     *
     * @param products {@code q k^T}, a fresh array (scaled in place)
     * @param rule how the products become scores
     * @param like an array of the queries' device and type (for the scalars)
     * @return the scores, of the products' shape
     */
    static NDArray scaled(NDArray products, AttentionScores rule, NDArray like) {
        NDArray scores = products.muli(Scalars.of(rule.scale(), like));
        if (rule.capped()) {
            // tanh(s / C) * C before the mask, as Gemma 2's eager attention (tanh's output kept for autograd)
            scores = scores.div(Scalars.of(rule.softcap(), like)).tanh().mul(Scalars.of(rule.softcap(), like));
        }
        return scores;
    }
}
