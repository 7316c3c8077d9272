package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.config.RopeScaling;
import org.junit.jupiter.api.Test;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Rotary embedding against an independent float64 computation of Hugging Face's definitions ({@code
 * _compute_default_rope_parameters}, {@code _compute_linear_scaling_rope_parameters}, {@code
 * _compute_llama3_parameters}, {@code apply_rotary_pos_emb} with {@code rotate_half}).
 */
class RotaryEmbeddingTest {

    /**
     * Ulps of float64 between these frequencies and the expected literals: Math.pow is within one
     * ulp, the division and the literal round by half an ulp each.
     */
    private static final int FREQUENCY_ULPS = 2;
    /** The llama3 band adds the wavelength, the smoothing factor and the blend: a dozen roundings. */
    private static final int SMOOTHED_ULPS = 16;
    /** float32's unit roundoff 2^-24: the relative error of one rounded operation. */
    private static final double UNIT_ROUNDOFF = Math.ulp(1f) / 2;

    /**
     * A decode step's one position takes its factors from Java copies of the tables' rows, read a
     * run of positions at a time: they equal the rows the engine gathers for a pass of two positions
     * bit for bit, at the ends of runs, at the context window's last position (a run cut short there)
     * and back at an earlier position, under a first owner of the tables and a second.
     */
    @Test
    void aDecodeStepsFactorsEqualTheGatheredRowsBitForBit() {
        int d = 10;
        int window = 130;
        RotaryEmbedding rope = new RotaryEmbedding(d, window, 10000, RopeScaling.linear(2));
        for (int owners = 0; owners < 2; owners++) {
            try (NDManager owner = NDManager.newBaseManager()) {
                for (long position : new long[] {0, 1, 63, 64, 65, 127, 128, 129, 5, 70}) {
                    try (NDManager pass = owner.newSubManager()) {
                        NDList one = rope.cosSin(pass.create(new long[] {position}, new Shape(1, 1)), owner,
                                DataType.FLOAT32);
                        NDList two = rope.cosSin(pass.create(new long[] {position, position}, new Shape(1, 2)),
                                owner, DataType.FLOAT32);
                        for (int f = 0; f < 2; f++) {
                            assertEquals(new Shape(1, 1, 1, d), one.get(f).getShape());
                            float[] gathered = Arrays.copyOf(two.get(f).toFloatArray(), d);
                            assertArrayEquals(gathered, one.get(f).toFloatArray(), "position " + position);
                        }
                    }
                }
            }
        }
    }

    @Test
    void defaultFrequenciesAreThetaToTheMinusTwoIOverD() {
        double[] inv = RotaryEmbedding.inverseFrequencies(8, 10000, null);
        assertEquals(4, inv.length);
        assertEquals(1.0, inv[0], 0); // theta^0
        assertEquals(0.1, inv[1], FREQUENCY_ULPS * Math.ulp(0.1)); // 10000^(-2/8) = 10^-1
        assertEquals(0.01, inv[2], FREQUENCY_ULPS * Math.ulp(0.01)); // 10^-2
        assertEquals(0.001, inv[3], FREQUENCY_ULPS * Math.ulp(0.001)); // 10^-3
    }

    @Test
    void linearScalingDividesEveryFrequencyByTheFactor() {
        double[] inv = RotaryEmbedding.inverseFrequencies(8, 10000, RopeScaling.linear(4));
        double[] expected = {0.25, 0.025, 0.0025, 0.00025};
        for (int i = 0; i < expected.length; i++) {
            // one more rounding, the division by the factor
            assertEquals(expected[i], inv[i], (FREQUENCY_ULPS + 1) * Math.ulp(expected[i]));
        }
    }

    @Test
    void llama3ScalingKeepsHighFrequenciesDividesLowOnesAndSmoothsTheBandBetween() {
        // D = 8, theta = 10000: inv_freq = 1, 0.1, 0.01, 0.001, wavelengths 2*pi*{1, 10, 100,
        // 1000}.
        // original 256, low 1, high 4: wavelengths below 64 kept, above 256 divided by factor 8.
        double[] inv =
                RotaryEmbedding.inverseFrequencies(8, 10000, RopeScaling.llama3(8, 1, 4, 256));
        assertEquals(1.0, inv[0], FREQUENCY_ULPS * Math.ulp(1.0)); // 6.28 < 64: kept
        assertEquals(0.1, inv[1], FREQUENCY_ULPS * Math.ulp(0.1)); // 62.8 < 64: kept
        // 628.3 > 256 and 6283 > 256: divided by 8 (exactly)
        assertEquals(0.01 / 8, inv[2], FREQUENCY_ULPS * Math.ulp(0.01 / 8));
        assertEquals(0.001 / 8, inv[3], FREQUENCY_ULPS * Math.ulp(0.001 / 8));

        // original 1024: wavelength 628.3 lies in [256, 1024]; smooth = (1024/628.3 - 1) / 3.
        double[] banded =
                RotaryEmbedding.inverseFrequencies(8, 10000, RopeScaling.llama3(8, 1, 4, 1024));
        double smooth = (1024 / (200 * Math.PI) - 1) / 3;
        assertTrue(smooth > 0 && smooth < 1);
        double blended = (1 - smooth) * 0.01 / 8 + smooth * 0.01;
        assertEquals(blended, banded[2], SMOOTHED_ULPS * Math.ulp(blended));
        assertEquals(1.0, banded[0], FREQUENCY_ULPS * Math.ulp(1.0));
        assertEquals(0.1, banded[1], FREQUENCY_ULPS * Math.ulp(0.1)); // 62.8 < 256: kept
        assertEquals(0.001 / 8, banded[3], FREQUENCY_ULPS * Math.ulp(0.001 / 8)); // 6283 > 1024: divided
    }

    @Test
    void longRopeDividesEachFrequencyByTheFactorSetTheContextWindowPicksAndScalesCosAndSin() {
        int d = 8;
        double base = 10000;
        List<Double> shortFactor = List.of(1.0, 1.25, 1.5, 2.0);
        List<Double> longFactor = List.of(1.0, 3.0, 9.0, 40.0);
        int original = 8;
        for (int window : new int[] {8, 32}) {
            RopeScaling scaling = RopeScaling.longRope(shortFactor, longFactor, 32, original, null);
            // Hugging Face's default: factor = 32 / 8 = 4 > 1
            double attention = Math.sqrt(1 + Math.log(4.0) / Math.log(original));
            assertEquals(attention, scaling.attentionFactor(), 2 * Math.ulp(attention));
            List<Double> ext = window > original ? longFactor : shortFactor;
            RotaryEmbedding rope = new RotaryEmbedding(d, window, base, scaling);
            double[] inv = rope.inverseFrequencies();
            double[] expected = new double[d / 2];
            for (int i = 0; i < d / 2; i++) {
                // inv_freq = 1 / (ext_factors * base ** (arange(0, dim, 2) / dim))
                expected[i] = 1.0 / (ext.get(i) * Math.pow(base, 2.0 * i / d));
                // pow within an ulp; two roundings here and two in the production order
                assertEquals(expected[i], inv[i], 4 * Math.ulp(expected[i]), "window " + window + " i " + i);
            }
            try (NDManager owner = NDManager.newBaseManager()) {
                NDArray[] tables = rope.tables(owner, DataType.FLOAT64);
                for (int p = 0; p < window; p++) {
                    for (int i = 0; i < d / 2; i++) {
                        double angle = p * expected[i];
                        // the angle's relative error (inv_freq's ulps, the product) moves cos and sin by
                        // at most |angle| times it; cos, sin and the attention product round once more each
                        double tolerance = 6 * Math.ulp(Math.max(angle, 1.0)) * attention;
                        assertEquals(attention * Math.cos(angle), tables[0].getDouble(p, i), tolerance);
                        assertEquals(attention * Math.cos(angle), tables[0].getDouble(p, i + d / 2), tolerance);
                        assertEquals(-attention * Math.sin(angle), tables[1].getDouble(p, i), tolerance);
                        assertEquals(attention * Math.sin(angle), tables[1].getDouble(p, i + d / 2), tolerance);
                    }
                }
            }
        }
    }

    @Test
    void rotatesHalvesLikeHuggingFaceRotateHalfAtPerRowPositions() {
        int b = 2;
        int h = 3;
        int t = 4;
        int d = 8;
        long[][] positions = {{0, 1, 2, 3}, {5, 9, 2, 30}};
        RopeScaling scaling = RopeScaling.llama3(8, 1, 4, 1024);
        RotaryEmbedding rope = new RotaryEmbedding(d, 64, 10000, scaling);
        double[] inv = hfLlama3InverseFrequencies(d, 10000, 8, 1, 4, 1024);
        Random random = new Random(7);
        float[] x = new float[b * h * t * d];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextGaussian();
        }
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray input = manager.create(x, new Shape(b, h, t, d));
            NDList cosSin = rope.cosSin(manager.create(positions), manager, DataType.FLOAT32);
            float[] actual = RotaryEmbedding.rotate(input, cosSin).toFloatArray();
            for (int bi = 0; bi < b; bi++) {
                for (int hi = 0; hi < h; hi++) {
                    for (int ti = 0; ti < t; ti++) {
                        int base = ((bi * h + hi) * t + ti) * d;
                        for (int j = 0; j < d; j++) {
                            // emb = cat(freqs, freqs); rotate_half(x) = cat(-x2, x1)
                            double angle = positions[bi][ti] * inv[j % (d / 2)];
                            double rotated = j < d / 2 ? -x[base + j + d / 2] : x[base + j - d / 2];
                            double expected =
                                    x[base + j] * Math.cos(angle) + rotated * Math.sin(angle);
                            // float32 rounds the table entries, both products and the sum
                            double magnitude =
                                    Math.abs(x[base + j] * Math.cos(angle)) + Math.abs(rotated * Math.sin(angle));
                            assertEquals(
                                    expected,
                                    actual[base + j],
                                    3 * UNIT_ROUNDOFF * magnitude,
                                    "b" + bi + " h" + hi + " t" + ti + " j" + j);
                        }
                    }
                }
            }
        }
    }

    @Test
    void tablesAreMadeOncePerDeviceAndTypeAndRemadeAfterTheirOwnerCloses() {
        RotaryEmbedding rope = new RotaryEmbedding(8, 32, 10000, null);
        try (NDManager owner = NDManager.newBaseManager()) {
            NDArray[] first = rope.tables(owner, DataType.FLOAT32);
            assertSame(first, rope.tables(owner, DataType.FLOAT32));
            assertEquals(new Shape(32, 8), first[0].getShape()); // cat(cos, cos)
            assertNotSame(first, rope.tables(owner, DataType.FLOAT64));
            NDArray[] again;
            try (NDManager other = NDManager.newBaseManager()) {
                owner.close();
                assertTrue(first[0].isReleased());
                again = rope.tables(other, DataType.FLOAT32);
                assertNotSame(first, again);
                // computed in float64, then rounded to float32 by half an ulp
                double cos = Math.cos(31 * 0.1);
                double sin = Math.sin(31 * 0.1);
                assertEquals(cos, again[0].getFloat(31, 1), Math.ulp((float) cos));
                assertEquals(cos, again[0].getFloat(31, 5), Math.ulp((float) cos));
                assertEquals(-sin, again[1].getFloat(31, 1), Math.ulp((float) sin)); // cat(-sin, sin)
                assertEquals(sin, again[1].getFloat(31, 5), Math.ulp((float) sin));
            }
        }
    }

    /** Hugging Face's {@code _compute_llama3_parameters}, written out independently. */
    private static double[] hfLlama3InverseFrequencies(
            int dim, double base, double factor, double low, double high, double original) {
        double[] out = new double[dim / 2];
        for (int i = 0; i < dim / 2; i++) {
            double invFreq = 1.0 / Math.pow(base, (double) (2 * i) / dim);
            double wavelen = 2 * Math.PI / invFreq;
            double invFreqLlama = wavelen > original / low ? invFreq / factor : invFreq;
            double smoothFactor = (original / wavelen - low) / (high - low);
            double smoothed =
                    (1 - smoothFactor) * invFreqLlama / factor + smoothFactor * invFreqLlama;
            boolean medium = !(wavelen < original / high) && !(wavelen > original / low);
            out[i] = medium ? smoothed : invFreqLlama;
        }
        return out;
    }
}
