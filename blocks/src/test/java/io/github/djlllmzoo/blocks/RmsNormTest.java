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
                            expected, actual[row * WIDTH + j], 1e-6 * (1 + Math.abs(expected)));
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
                assertEquals(a[i], b[i], 4e-3 * (1 + Math.abs(a[i])));
            }
        }
    }
}
