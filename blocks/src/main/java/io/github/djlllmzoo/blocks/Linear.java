package io.github.djlllmzoo.blocks;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.NormalInitializer;

/**
 * PyTorch's {@code nn.Linear}: {@code y = x @ weight^T (+ bias)} with {@code weight} of shape
 * (out, in), as Llama checkpoints store {@code q_proj}, {@code lm_head} and the others. A single
 * token's projection is split across CPU cores ({@link SplitProjection}).
 */
public final class Linear extends UnaryBlock {

    private final int outFeatures;
    private final Parameter weight;
    private final Parameter bias;
    private final SplitProjection split = new SplitProjection();

    /**
     * @param inFeatures input width
     * @param outFeatures output width
     * @param withBias whether the projection has a bias
     * @param initStd standard deviation of the normal initializer for the weight
     */
    public Linear(int inFeatures, int outFeatures, boolean withBias, float initStd) {
        this.outFeatures = outFeatures;
        weight =
                declare(
                        "weight",
                        Parameter.Type.WEIGHT,
                        new Shape(outFeatures, inFeatures),
                        new NormalInitializer(initStd));
        bias =
                withBias
                        ? declare(
                                "bias",
                                Parameter.Type.BIAS,
                                new Shape(outFeatures),
                                Parameter.Type.BIAS.getInitializer())
                        : null;
    }

    @Override
    public NDArray forward(ParameterStore store, NDArray x, boolean training) {
        NDArray w = value(store, weight, x.getDevice(), training);
        NDArray b = value(store, bias, x.getDevice(), training);
        return split.linear(x, w, b, training);
    }

    /**
     * Two projections of the same input, each whole on its own core where a step's products are
     * split ({@link SplitProjection#pair}: one hand-over instead of two, nothing to join), else
     * one after the other.
     *
     * @param store the parameter store
     * @param x input (..., in)
     * @param first a projection
     * @param second a projection of the same shape as {@code first}
     * @param training whether this is a training pass
     * @return {@code first(x)} and {@code second(x)}, each (..., out)
     */
    public static NDArray[] forwardPair(
            ParameterStore store, NDArray x, Linear first, Linear second, boolean training) {
        Device device = x.getDevice();
        NDArray[] weights = {
            value(store, first.weight, device, training), value(store, second.weight, device, training)
        };
        NDArray[] biases = {
            value(store, first.bias, device, training), value(store, second.bias, device, training)
        };
        NDArray[] both = SplitProjection.pair(x, weights, biases, training);
        if (both != null) {
            return both;
        }
        return new NDArray[] {
            first.split.linear(x, weights[0], biases[0], training),
            second.split.linear(x, weights[1], biases[1], training)
        };
    }

    /** @return the weight parameter, shape (out, in) */
    public Parameter weight() {
        return weight;
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape in = inputShapes[0];
        return new Shape[] {in.slice(0, in.dimension() - 1).add(outFeatures)};
    }
}
