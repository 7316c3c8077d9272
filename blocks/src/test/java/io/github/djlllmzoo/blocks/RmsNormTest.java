package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.Test;
import java.util.Random;

class RmsNormTest {

    private static final int WIDTH = 6;
    private static final float EPS = 1e-5f;
    /** float32's unit roundoff 2^-24: the relative error of one rounded operation. */
    private static final double UNIT_ROUNDOFF = Math.ulp(1f) / 2;
    /**
     * Rounded operations an output goes through, none of them cancelling (the squares are
     * positive): the squares and their sum (WIDTH), the mean and the epsilon (2), torch's rsqrt
     * (counted as 4, within a few ulps) and the products with x and the weight (2).
     */
    private static final int ROUNDINGS = WIDTH + 8;
    /** float16's unit roundoff 2^-11. */
    private static final double HALF_UNIT_ROUNDOFF = 0x1p-11;

    @Test
    void scalesEachVectorByItsInverseRootMeanSquareThenByWeight() {
        Random random = new Random(11);
        float[] x = new float[2 * 3 * WIDTH];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) (random.nextGaussian() * (1 + i % 4)); // rows of different scales
        }
        float[] w = new float[WIDTH];
        for (int i = 0; i < WIDTH; i++) {
            w[i] = (float) (0.5 + random.nextDouble());
        }
        try (NDManager manager = NDManager.newBaseManager()) {
            RmsNorm norm = new RmsNorm(WIDTH, EPS);
            norm.namedParameters().get("weight").setArray(manager.create(w));
            float[] actual =
                    norm.forward(null, manager.create(x, new Shape(2, 3, WIDTH)), false)
                            .toFloatArray();

            for (int row = 0; row < 6; row++) {
                double sumSquares = 0;
                for (int j = 0; j < WIDTH; j++) {
                    sumSquares += (double) x[row * WIDTH + j] * x[row * WIDTH + j];
                }
                double inverseRms = 1 / Math.sqrt(sumSquares / WIDTH + EPS);
                for (int j = 0; j < WIDTH; j++) {
                    double expected = x[row * WIDTH + j] * inverseRms * w[j];
                    assertEquals(
                            expected, actual[row * WIDTH + j], ROUNDINGS * UNIT_ROUNDOFF * Math.abs(expected));
                }
            }
        }
    }

    @Test
    void halfPrecisionModelKeepsItsTypeAndMatchesFloat32() {
        Random random = new Random(5);
        float[] x = new float[4 * WIDTH];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextGaussian();
        }
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray input = manager.create(x, new Shape(4, WIDTH));
            RmsNorm fullNorm = new RmsNorm(WIDTH, EPS);
            fullNorm.namedParameters().get("weight").setArray(manager.ones(new Shape(WIDTH)));
            NDArray full = fullNorm.forward(null, input, false);
            RmsNorm halfNorm = new RmsNorm(WIDTH, EPS);
            halfNorm.namedParameters()
                    .get("weight")
                    .setArray(manager.ones(new Shape(WIDTH), DataType.FLOAT16));
            NDArray half = halfNorm.forward(null, input.toType(DataType.FLOAT16, false), false);
            assertEquals(DataType.FLOAT16, half.getDataType());
            float[] a = full.toFloatArray();
            float[] b = half.toType(DataType.FLOAT32, false).toFloatArray();
            for (int i = 0; i < a.length; i++) {
                // The input's rounding to float16 moves x / rms(x) by up to two unit roundoffs
                // (x and the mean square), the output's by one more; one for the float32 arithmetic,
                // and the spacing of float16's subnormals near zero.
                assertEquals(a[i], b[i], 4 * HALF_UNIT_ROUNDOFF * Math.abs(a[i]) + 0x1p-24);
            }
        }
    }
}
