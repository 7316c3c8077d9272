package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.blocks.config.LlamaConfig;

/**
 * How far two float32 evaluations of the same sums (products, attention, a whole model's logits) may
 * differ through rounding alone, for the tests that compare two ways of computing them (a kernel
 * and the engine, a split and one call, a KV cache and a full recompute).
 *
 * <p>A float32 sum of {@code n} terms {@code t_k}, in any order (blocked, vectorized, with fused
 * multiply-adds: the order is what differs between CPUs and BLAS kernels), rounds each partial sum
 * {@code s_k} by a relative error of at most {@code u = 2^-24}, so it is off by {@code sum_k d_k
 * s_k}. Those roundings are independent and of mean zero, so the error grows as {@code sqrt(n)}, not
 * {@code n} (Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019); with terms of random signs, as these
 * tests draw them, the partial sums stay of the order of the terms' root sum of squares {@code
 * ||t||}. Two evaluations therefore differ by a small multiple of {@code 2u sqrt(n) ||t||}: {@link
 * #MARGIN} of them keeps a chance failure out of reach, while a wrong term, column or bias is off by
 * a whole term. Other modules' tests use it through this module's test jar.
 */
public final class RoundingBound {

    /** float32's machine epsilon, {@code 2u = 2^-23}. */
    public static final double EPSILON = Math.ulp(1f);

    /** Rounding scales allowed (standard deviations of a sum of independent roundings). */
    public static final double MARGIN = 8;

    /**
     * How far one float32 evaluation of {@code tanh(s / C) * C} may be from the exact value, in ulps
     * of {@code C}: the division and the product round by half an ulp each, tanh (glibc's, Sleef's,
     * the decode kernel's) is within 2 ulp, and its result rounds by half an ulp more.
     */
    public static final double SOFTCAP_ULPS = 4;

    private RoundingBound() {}

    /**
     * @param n the number of terms of each sum
     * @param norm the largest root sum of squares of one sum's terms
     * @return how far two float32 evaluations of such sums may differ
     */
    public static float ofSums(long n, double norm) {
        return (float) (MARGIN * EPSILON * Math.sqrt(n) * norm);
    }

    /**
     * The bound for the entries of {@code x W^T + b} (or {@code x W + b}). Computed here in Java,
     * so that it makes no array in any manager the test counts.
     *
     * @param x the input, {@code (..., in)}
     * @param weight {@code (out, in)} if {@code outIn}, else {@code (in, out)}
     * @param bias {@code (out)}, or {@code null}
     * @param outIn how the weight is stored
     * @return how far two float32 evaluations of the product may differ
     */
    public static float ofProduct(NDArray x, NDArray weight, NDArray bias, boolean outIn) {
        int in = Math.toIntExact(x.getShape().get(x.getShape().dimension() - 1));
        int out = Math.toIntExact(weight.getShape().get(outIn ? 0 : 1));
        float[] xs = x.toFloatArray();
        float[] ws = weight.toFloatArray();
        float[] bs = bias == null ? new float[out] : bias.toFloatArray();
        double largest = 0;
        for (int row = 0; row < xs.length / in; row++) {
            for (int o = 0; o < out; o++) {
                double sumSquares = (double) bs[o] * bs[o];
                for (int k = 0; k < in; k++) {
                    double term = (double) xs[row * in + k] * (outIn ? ws[o * in + k] : ws[k * out + o]);
                    sumSquares += term * term;
                }
                largest = Math.max(largest, sumSquares);
            }
        }
        return ofSums(in + (bias == null ? 0 : 1), Math.sqrt(largest));
    }

    /**
     * The bound for scaled dot-product attention over {@code S} positions: each score {@code q.k /
     * sqrt(D)} is a sum of {@code D} terms, and a score off by {@code e} moves the softmax weights
     * by at most {@code 2e} in total, so the output by {@code 2e max|v|}; the output is then a sum of
     * {@code S} terms {@code p_j v_j}, whose root sum of squares is at most {@code max|v|} because
     * the weights sum to 1.
     *
     * @param q the queries, {@code (B, H, T, D)}
     * @param keys the keys attended over, {@code (B, H_kv, S, D)}, {@code H} a multiple of {@code H_kv}
     * @param values the values, {@code (B, H_kv, S, D)}
     * @return how far two float32 evaluations of the attention may differ
     */
    public static float ofAttention(NDArray q, NDArray keys, NDArray values) {
        return ofAttention(q, keys, values, AttentionScores.standard(q.getShape().get(3)));
    }

    /**
     * {@link #ofAttention(NDArray, NDArray, NDArray)} for scores {@code q.k * scale}, soft-capped to
     * {@code tanh(s / C) * C} where {@code scores} caps them. The cap's slope is at most 1, so it
     * passes a score's error on undiminished, and adds its own: each evaluation of it is within
     * {@link #SOFTCAP_ULPS} ulps of {@code C} of the exact value.
     *
     * @param q the queries, {@code (B, H, T, D)}
     * @param keys the keys attended over, {@code (B, H_kv, S, D)}, {@code H} a multiple of {@code H_kv}
     * @param values the values, {@code (B, H_kv, S, D)}
     * @param scores the scale and soft cap of the scores
     * @return how far two float32 evaluations of the attention may differ
     */
    public static float ofAttention(NDArray q, NDArray keys, NDArray values, AttentionScores scores) {
        int d = Math.toIntExact(q.getShape().get(3));
        int s = Math.toIntExact(keys.getShape().get(2));
        float[] qs = q.toFloatArray();
        float[] ks = keys.toFloatArray();
        int queriesPerKvHead = qs.length / d / (ks.length / (s * d)); // G * T, as the engine groups them
        double largest = 0;
        for (int kvHead = 0; kvHead < ks.length / (s * d); kvHead++) { // over B * H_kv
            for (int query = 0; query < queriesPerKvHead; query++) {
                int qBase = (kvHead * queriesPerKvHead + query) * d;
                for (int j = 0; j < s; j++) {
                    int kBase = (kvHead * s + j) * d;
                    double sumSquares = 0;
                    for (int i = 0; i < d; i++) {
                        double term = (double) qs[qBase + i] * ks[kBase + i];
                        sumSquares += term * term;
                    }
                    largest = Math.max(largest, sumSquares);
                }
            }
        }
        double maxValue = 0;
        for (float v : values.toFloatArray()) {
            maxValue = Math.max(maxValue, Math.abs(v));
        }
        double scoreError = ofSums(d, scores.scale() * Math.sqrt(largest))
                + (scores.capped() ? 2 * SOFTCAP_ULPS * EPSILON * scores.softcap() : 0);
        return (float) (2 * scoreError * maxValue + ofSums(s, maxValue));
    }

    /**
     * The bound for a whole model's logits computed two ways (with and without a KV cache, a padded
     * row and the row alone). Every layer's sums round relative to the unit-scale vectors its norms
     * make, so the final hidden state carries the independent roundings of all the sums along its
     * path, {@link #pathLength} terms in all, relative to its own scale; the LM head carries that
     * relative error onto the logits, whose largest magnitude scales it.
     *
     * @param config the model's config
     * @param positions the most positions any attention of the comparison spans
     * @param logits the reference logits
     * @return how far two float32 evaluations of the logits may differ
     */
    public static float ofLogits(DecoderConfig config, int positions, NDArray logits) {
        return ofLogits(config, positions, logits.toFloatArray());
    }

    /**
     * {@link #ofLogits(DecoderConfig, int, NDArray)} of logits already read.
     *
     * @param config the model's config
     * @param positions the most positions any attention of the comparison spans
     * @param logits the reference logits
     * @return how far two float32 evaluations of the logits may differ
     */
    public static float ofLogits(DecoderConfig config, int positions, float[] logits) {
        double largest = 0;
        for (float logit : logits) {
            largest = Math.max(largest, Math.abs(logit));
        }
        return ofSums(pathLength(config, positions), largest);
    }

    /**
     * The terms of all the sums a logit depends on along one path through the model: per layer the
     * query, key and value projections ({@code hidden}), a score ({@code head_dim}), the weighted
     * values ({@code positions}), the output projection ({@code heads * head_dim}), the MLP's input
     * ({@code hidden}) and output ({@code intermediate}) projections; then the LM head ({@code
     * hidden}).
     *
     * @param config the model's config
     * @param positions the most positions an attention spans
     * @return the total number of terms
     */
    public static long pathLength(DecoderConfig config, int positions) {
        int intermediate;
        if (config instanceof Gpt2Config gpt2) {
            intermediate = gpt2.nInner();
        } else if (config instanceof LlamaConfig llama) {
            intermediate = llama.intermediateSize();
        } else {
            throw new IllegalArgumentException("no MLP width known for " + config.modelType());
        }
        long hidden = config.hiddenSize();
        long layer = hidden + config.headDim() + positions + (long) config.numHeads() * config.headDim() + hidden
                + intermediate;
        return config.numLayers() * layer + hidden;
    }
}
