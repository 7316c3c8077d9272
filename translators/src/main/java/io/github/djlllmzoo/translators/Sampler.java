package io.github.djlllmzoo.translators;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Draws the next token from processed logits with its own seeded random generator, so a seed
 * gives the same tokens on every run and every thread. One sampler serves one sequence and is not
 * shared between threads.
 */
public final class Sampler {

    private final SplittableRandom random;

    private Sampler(SplittableRandom random) {
        this.random = random;
    }

    /**
     * Independent samplers for the sequences of one request, all derived from one seed.
     *
     * @param seed the request's seed
     * @param count the number of sequences
     * @return one sampler per sequence, the same for the same seed
     */
    public static List<Sampler> seeded(long seed, int count) {
        SplittableRandom root = new SplittableRandom(seed);
        List<Sampler> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            out.add(new Sampler(root.split()));
        }
        return out;
    }

    /**
     * Draws a token with probability {@code softmax(logits)}; -infinity logits are never drawn.
     *
     * @param logits the processed logits
     * @return the token id
     * @throws IllegalStateException if every logit is -infinity or NaN
     */
    public int sample(float[] logits) {
        float max = Float.NEGATIVE_INFINITY;
        for (float x : logits) {
            if (x > max) {
                max = x;
            }
        }
        if (max == Float.NEGATIVE_INFINITY) {
            throw new IllegalStateException("no token is left to sample from: every logit is -inf or NaN");
        }
        double[] weights = new double[logits.length];
        double total = 0;
        for (int i = 0; i < logits.length; i++) {
            if (logits[i] > Float.NEGATIVE_INFINITY) {
                weights[i] = Math.exp(logits[i] - max);
                total += weights[i];
            }
        }
        double u = random.nextDouble() * total;
        double cumulative = 0;
        int last = -1;
        for (int i = 0; i < weights.length; i++) {
            if (weights[i] > 0) {
                cumulative += weights[i];
                last = i;
                if (u < cumulative) {
                    return i;
                }
            }
        }
        return last;
    }

    /**
     * The most likely token (the first one on ties).
     *
     * @param logits the logits
     * @return the index of the largest logit
     */
    public static int argmax(float[] logits) {
        int best = 0;
        for (int i = 1; i < logits.length; i++) {
            if (logits[i] > logits[best]) {
                best = i;
            }
        }
        return best;
    }

    /**
     * The natural-log probability of one token under {@code softmax(logits)}.
     *
     * @param logits the logits
     * @param token the token id
     * @return {@code log softmax(logits)[token]}
     */
    public static float logProbability(float[] logits, int token) {
        return (float) (logits[token] - logNormalizer(logits));
    }

    /**
     * {@code log(sum(exp(logits)))}, computed stably: a token's log-probability is its logit minus
     * this.
     *
     * @param logits the logits
     * @return the log of the softmax's denominator
     */
    public static double logNormalizer(float[] logits) {
        double max = Float.NEGATIVE_INFINITY;
        for (float x : logits) {
            max = Math.max(max, x);
        }
        double total = 0;
        for (float x : logits) {
            total += Math.exp(x - max);
        }
        return max + Math.log(total);
    }
}
