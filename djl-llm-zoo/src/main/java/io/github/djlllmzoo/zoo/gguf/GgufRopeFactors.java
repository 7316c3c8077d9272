package io.github.djlllmzoo.zoo.gguf;

import io.github.djlllmzoo.blocks.RotaryEmbedding;
import io.github.djlllmzoo.blocks.config.RopeScaling;

/**
 * Llama 3.1's rope scaling from the per-frequency factors llama.cpp's converter stores in {@code
 * rope_freqs.weight} (each frequency is divided by its factor) instead of the {@code rope_scaling}
 * parameters. The factors are 1 where a wavelength is under {@code original / high_freq_factor},
 * {@code factor} where it is over {@code original / low_freq_factor}, and between them {@code 1 /
 * ((1 - s) / factor + s)} with {@code s} linear in the inverse wavelength: so {@code factor} is the
 * largest, and the band's edges follow from the line through the factors between (or, with fewer
 * than two there, from any edges that separate the factors of 1 from those of {@code factor}). The
 * parameters found are accepted only if they give back every stored factor.
 */
final class GgufRopeFactors {

    /** Relative agreement of a recomputed factor with the stored float32 one. */
    private static final double TOLERANCE = 1e-4;

    /** The scale of the band edges when nothing in the file fixes it (Llama 3.1's original context). */
    private static final int ORIGINAL_CONTEXT = 8192;

    private GgufRopeFactors() {}

    /**
     * The Llama 3 scaling that gives {@code factors}.
     *
     * @param factors the stored factors, one per frequency (head width / 2)
     * @param headDim the head width
     * @param theta the rotary base
     * @return the scaling, or {@code null} when every factor is 1
     * @throws IllegalArgumentException if no Llama 3 scaling gives the factors
     */
    static RopeScaling llama3(float[] factors, int headDim, double theta) {
        if (factors.length != headDim / 2) {
            throw new IllegalArgumentException(factors.length + " factors for a head of " + headDim);
        }
        double factor = 1;
        for (float f : factors) {
            factor = Math.max(factor, f);
        }
        if (factor == 1) {
            return null;
        }
        double[] base = RotaryEmbedding.inverseFrequencies(headDim, theta, null);
        // inverse wavelengths u: the lowest with a factor of 1, the highest with the full factor
        double lowestOne = Double.NaN;
        double highestFull = Double.NaN;
        double sumU = 0;
        double sumS = 0;
        double sumUu = 0;
        double sumUs = 0;
        int between = 0;
        for (int i = 0; i < factors.length; i++) {
            double u = base[i] / (2 * Math.PI);
            if (close(factors[i], 1)) {
                lowestOne = Double.isNaN(lowestOne) ? u : Math.min(lowestOne, u);
            } else if (close(factors[i], factor)) {
                highestFull = Double.isNaN(highestFull) ? u : Math.max(highestFull, u);
            } else {
                double s = (1 / factors[i] - 1 / factor) / (1 - 1 / factor);
                sumU += u;
                sumS += s;
                sumUu += u * u;
                sumUs += u * s;
                between++;
            }
        }
        // s = (u - ul) / (uh - ul) for inverse wavelengths u between the edges ul < uh
        double ul;
        double uh;
        if (between >= 2) {
            double slope = (between * sumUs - sumU * sumS) / (between * sumUu - sumU * sumU);
            double intercept = (sumS - slope * sumU) / between;
            ul = -intercept / slope;
            uh = ul + 1 / slope;
        } else {
            if (between == 1) {
                throw new IllegalArgumentException("one factor between 1 and " + factor + " does not fix the band");
            }
            double high = Double.isNaN(lowestOne) ? base[0] / (2 * Math.PI) * 2 : lowestOne;
            double low = Double.isNaN(highestFull) ? base[factors.length - 1] / (2 * Math.PI) / 2 : highestFull;
            // edges strictly between the last factor of `factor` and the first factor of 1
            ul = low * Math.pow(high / low, 1.0 / 3);
            uh = low * Math.pow(high / low, 2.0 / 3);
        }
        RopeScaling scaling = RopeScaling.llama3(factor, ORIGINAL_CONTEXT * ul, ORIGINAL_CONTEXT * uh, ORIGINAL_CONTEXT);
        double[] scaled = RotaryEmbedding.inverseFrequencies(headDim, theta, scaling);
        for (int i = 0; i < factors.length; i++) {
            if (!close(base[i] / scaled[i], factors[i])) {
                throw new IllegalArgumentException("factor " + i + " is " + factors[i] + " where Llama 3's scaling "
                        + scaling + " gives " + base[i] / scaled[i]);
            }
        }
        return scaling;
    }

    private static boolean close(double a, double b) {
        return Math.abs(a - b) <= TOLERANCE * Math.abs(b);
    }
}
