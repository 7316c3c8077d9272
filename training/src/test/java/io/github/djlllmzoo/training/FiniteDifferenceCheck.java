package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import io.github.djlllmzoo.blocks.ConfiguredBlock;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;

/**
 * Compares the gradients DJL's autograd gives a block's parameters with central finite differences
 * {@code (L(w + h) - L(w - h)) / 2h} on a random sample of entries of every parameter, in float64.
 */
final class FiniteDifferenceCheck {

    private static final double STEP = 1e-6;
    private static final double RELATIVE_TOLERANCE = 1e-4;
    private static final double ABSOLUTE_TOLERANCE = 1e-9;

    private FiniteDifferenceCheck() {}

    /**
     * @param block an initialized float64 block
     * @param loss computes a scalar loss from the block's current parameters (a fresh forward)
     * @param samplesPerParameter entries checked per parameter
     * @param random chooses the entries
     * @return how many entries were checked
     */
    static int assertGradientsMatch(
            ConfiguredBlock block, Supplier<NDArray> loss, int samplesPerParameter, Random random) {
        Map<String, Parameter> parameters = block.namedParameters();
        try (GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
            NDArray value = loss.get();
            assertTrue(value.getDataType() == DataType.FLOAT64, "the check runs in float64");
            collector.backward(value);
        }
        int checked = 0;
        for (Map.Entry<String, Parameter> e : parameters.entrySet()) {
            NDArray weight = e.getValue().getArray();
            NDArray gradient = weight.getGradient();
            double[] analytic = gradient.toDoubleArray();
            gradient.close();
            double[] values = weight.toDoubleArray();
            Shape shape = weight.getShape();
            for (int s = 0; s < samplesPerParameter; s++) {
                int flat = random.nextInt(values.length);
                NDIndex index = new NDIndex(unravel(flat, shape));
                weight.set(index, values[flat] + STEP);
                double plus = scalar(loss.get());
                weight.set(index, values[flat] - STEP);
                double minus = scalar(loss.get());
                weight.set(index, values[flat]);
                double numeric = (plus - minus) / (2 * STEP);
                double tolerance =
                        RELATIVE_TOLERANCE * Math.max(Math.abs(numeric), Math.abs(analytic[flat])) + ABSOLUTE_TOLERANCE;
                assertTrue(
                        Math.abs(numeric - analytic[flat]) <= tolerance,
                        e.getKey() + "[" + flat + "]: autograd " + analytic[flat] + " vs finite difference " + numeric);
                checked++;
            }
        }
        return checked;
    }

    private static double scalar(NDArray array) {
        try (array) {
            return array.getDouble();
        }
    }

    private static long[] unravel(long flat, Shape shape) {
        long[] index = new long[shape.dimension()];
        for (int d = shape.dimension() - 1; d >= 0; d--) {
            index[d] = flat % shape.get(d);
            flat /= shape.get(d);
        }
        return index;
    }
}
