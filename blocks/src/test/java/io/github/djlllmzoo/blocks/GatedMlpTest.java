package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

class GatedMlpTest {

    private static final int HIDDEN = 3;
    private static final int INTER = 5;
    private static final int TOKENS = 2;
    /** float32's unit roundoff 2^-24: the relative error of one rounded operation. */
    private static final double UNIT_ROUNDOFF = Math.ulp(1f) / 2;
    /**
     * Rounded operations an output goes through, each off by at most one unit roundoff of the
     * magnitudes it combines (Higham's gamma_n bound of a sum): the gate and the up sums (HIDDEN + 1
     * terms each, both reaching the product), silu's exp, add and division and the product (4), the
     * down sum (INTER + 1 terms).
     */
    private static final int ROUNDINGS = 2 * (HIDDEN + 1) + 4 + (INTER + 1);

    @ParameterizedTest(name = "bias={0}")
    @ValueSource(booleans = {false, true})
    void computesDownOfSiluGateTimesUp(boolean bias) {
        Random random = new Random(bias ? 3 : 4);
        double[][] gate = matrix(random, INTER, HIDDEN);
        double[][] up = matrix(random, INTER, HIDDEN);
        double[][] down = matrix(random, HIDDEN, INTER);
        double[] gateBias = vector(random, INTER, bias);
        double[] upBias = vector(random, INTER, bias);
        double[] downBias = vector(random, HIDDEN, bias);
        double[][] x = matrix(random, TOKENS, HIDDEN);

        try (NDManager manager = NDManager.newBaseManager()) {
            GatedMlp mlp = new GatedMlp(HIDDEN, INTER, bias, 0.02f);
            List<String> expectedNames = new ArrayList<>();
            for (String projection : new String[] {"gate_proj", "up_proj", "down_proj"}) {
                expectedNames.add(projection + ".weight");
                if (bias) {
                    expectedNames.add(projection + ".bias");
                }
            }
            assertEquals(expectedNames, new ArrayList<>(mlp.namedParameters().keySet()));
            var params = mlp.namedParameters();
            params.get("gate_proj.weight").setArray(manager.create(floats(gate)));
            params.get("up_proj.weight").setArray(manager.create(floats(up)));
            params.get("down_proj.weight").setArray(manager.create(floats(down)));
            if (bias) {
                params.get("gate_proj.bias").setArray(manager.create(floats(gateBias)));
                params.get("up_proj.bias").setArray(manager.create(floats(upBias)));
                params.get("down_proj.bias").setArray(manager.create(floats(downBias)));
            }
            float[][] input = floats(x);
            float[] actual =
                    mlp.forward(null, manager.create(input).reshape(1, TOKENS, HIDDEN), false)
                            .toFloatArray();

            for (int t = 0; t < TOKENS; t++) {
                double[] g = affine(gate, gateBias, x[t]);
                double[] u = affine(up, upBias, x[t]);
                double[] h = new double[INTER];
                // The same products over absolute values bound the terms each float32 sum rounds.
                double[] gAbs = affine(abs(gate), abs(gateBias), abs(x[t]));
                double[] uAbs = affine(abs(up), abs(upBias), abs(x[t]));
                double[] hAbs = new double[INTER];
                for (int i = 0; i < INTER; i++) {
                    h[i] = g[i] / (1 + Math.exp(-g[i])) * u[i]; // silu(g) * u
                    hAbs[i] = 1.1 * gAbs[i] * uAbs[i]; // |silu(g)| <= |g| and |silu'| <= 1.1
                }
                double[] y = affine(down, downBias, h);
                double[] yAbs = affine(abs(down), abs(downBias), hAbs);
                for (int j = 0; j < HIDDEN; j++) {
                    assertEquals(y[j], actual[t * HIDDEN + j], ROUNDINGS * UNIT_ROUNDOFF * yAbs[j]);
                }
            }
            assertEquals(new Shape(HIDDEN, INTER), mlp.declaredShapes().get("down_proj.weight"));
        }
    }

    private static double[] affine(double[][] w, double[] b, double[] x) {
        double[] out = new double[w.length];
        for (int i = 0; i < w.length; i++) {
            double sum = b[i];
            for (int j = 0; j < x.length; j++) {
                sum += w[i][j] * x[j];
            }
            out[i] = sum;
        }
        return out;
    }

    private static double[][] abs(double[][] m) {
        double[][] out = new double[m.length][];
        for (int i = 0; i < m.length; i++) {
            out[i] = abs(m[i]);
        }
        return out;
    }

    private static double[] abs(double[] v) {
        double[] out = new double[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = Math.abs(v[i]);
        }
        return out;
    }

    private static double[][] matrix(Random random, int rows, int cols) {
        double[][] m = new double[rows][cols];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                m[i][j] = (float) random.nextGaussian(); // representable in float32
            }
        }
        return m;
    }

    private static double[] vector(Random random, int size, boolean nonZero) {
        double[] v = new double[size];
        for (int i = 0; nonZero && i < size; i++) {
            v[i] = (float) random.nextGaussian();
        }
        return v;
    }

    private static float[][] floats(double[][] m) {
        float[][] out = new float[m.length][];
        for (int i = 0; i < m.length; i++) {
            out[i] = floats(m[i]);
        }
        return out;
    }

    private static float[] floats(double[] v) {
        float[] out = new float[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = (float) v[i];
        }
        return out;
    }
}
