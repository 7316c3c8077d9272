package io.github.djlllmzoo.blocks;

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
