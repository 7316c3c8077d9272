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
 *
 * <p>The loss {@code L} is the sum of an array of terms {@code t} (such as {@code block(x) * R}).
 * An entry passes when {@code |autograd - difference| <= RELATIVE_TOLERANCE * max(|autograd|,
 * |difference|) + ROUNDING_STEPS * eps * S / h}, with {@code eps = 2^-52} and {@code S = sum |t|}:
 *
 * <ul>
 *   <li>The absolute floor is the rounding noise of the difference quotient. A float64 evaluation
 *       of the loss is off by at most about {@code m * eps * S}, where {@code m} counts the rounding
 *       steps between the parameters and a term, each adding up to {@code eps} relative to the
 *       magnitudes it combines (the projections' dot products, softmax, the norms, the activation,
 *       the product with {@code R}), plus the {@code log2 n} levels of the pairwise sum of the
 *       {@code n} terms. The two evaluations round independently, so the quotient carries up to
 *       {@code 2 m eps S / 2h}. Where the true gradient is exactly zero (a key bias: softmax ignores
 *       a constant added to every key) this noise is all the difference shows, and which BLAS
 *       kernels the CPU gets decides its value. {@code ROUNDING_STEPS = 16} bounds {@code m} for
 *       these blocks: about ten rounded operations per term and {@code log2} of at most 160 terms.
 *   <li>The relative bound covers the central difference's truncation error {@code h^2 / 6 *
 *       |L'''|}: {@code 1e-6} admits a third derivative up to {@code 6e6} times the first at
 *       {@code h = 1e-6}, far above that of these blocks with unit-scale weights and inputs, while a
 *       wrong gradient (a missing term, a wrong scale) is off by much more.
 * </ul>
 *
 * <p>The step {@code h = 1e-6} is near {@code (3 eps S / |L'''|)^(1/3)}, where the two balance.
 */
final class FiniteDifferenceCheck {

    private static final double STEP = 1e-6;
    private static final double RELATIVE_TOLERANCE = 1e-6;
    private static final double ROUNDING_STEPS = 16;
    private static final double EPSILON = Math.ulp(1.0);

    private FiniteDifferenceCheck() {}

    /**
     * @param block an initialized float64 block
     * @param terms computes, from the block's current parameters (a fresh forward), the terms whose
     *     sum is the loss; a loss computed as one scalar is its own single term
     * @param samplesPerParameter entries checked per parameter
     * @param random chooses the entries
     * @return how many entries were checked
     */
    static int assertGradientsMatch(
            ConfiguredBlock block, Supplier<NDArray> terms, int samplesPerParameter, Random random) {
        Map<String, Parameter> parameters = block.namedParameters();
        double magnitude;
        try (GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
            NDArray t = terms.get();
            assertTrue(t.getDataType() == DataType.FLOAT64, "the check runs in float64");
            magnitude = t.abs().sum().getDouble();
            collector.backward(t.sum());
        }
        double noise = ROUNDING_STEPS * EPSILON * magnitude / STEP;
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
                double plus = loss(terms);
                weight.set(index, values[flat] - STEP);
                double minus = loss(terms);
                weight.set(index, values[flat]);
                double numeric = (plus - minus) / (2 * STEP);
                double tolerance =
                        RELATIVE_TOLERANCE * Math.max(Math.abs(numeric), Math.abs(analytic[flat])) + noise;
                assertTrue(
                        Math.abs(numeric - analytic[flat]) <= tolerance,
                        e.getKey() + "[" + flat + "]: autograd " + analytic[flat] + " vs finite difference "
                                + numeric + " (tolerance " + tolerance + ", rounding noise " + noise + ")");
                checked++;
            }
        }
        return checked;
    }

    private static double loss(Supplier<NDArray> terms) {
        try (NDArray t = terms.get(); NDArray sum = t.sum()) {
            return sum.getDouble();
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
