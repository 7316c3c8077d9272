package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.NormalInitializer;

/**
 * PyTorch's {@code nn.Linear}: {@code y = x @ weight^T (+ bias)} with {@code weight} of shape
 * (out, in), as Llama checkpoints store {@code q_proj}, {@code lm_head} and the others; computed by
 * {@link Kernels#project}.
 * A {@link LoraAdapter} attached to it adds its update to the output.
 */
public final class Linear extends UnaryBlock {

    private final int outFeatures;
    private final ProjectionWeight projection;
    private final LoraSlot lora = new LoraSlot();

    /**
     * @param inFeatures input width
     * @param outFeatures output width
     * @param withBias whether the projection has a bias
     * @param initStd standard deviation of the normal initializer for the weight
     */
    public Linear(int inFeatures, int outFeatures, boolean withBias, float initStd) {
        this.outFeatures = outFeatures;
        Parameter weight =
                declare(
                        "weight",
                        Parameter.Type.WEIGHT,
                        new Shape(outFeatures, inFeatures),
                        new NormalInitializer(initStd));
        Parameter bias =
                withBias
                        ? declare(
                                "bias",
                                Parameter.Type.BIAS,
                                new Shape(outFeatures),
                                Parameter.Type.BIAS.getInitializer())
                        : null;
        projection = new ProjectionWeight(ProjectionWeight.Layout.OUT_IN, weight, bias);
    }

    @Override
    public NDArray forward(ParameterStore store, NDArray x, boolean training) {
        return lora.apply(kernels(), store, x, kernels().project(x, projection, store, training), training); // (..., out)
    }

    /**
     * Two projections of the same input, which the kernels may compute at once ({@link
     * Kernels#projectPair}).
     *
     * @param store the parameter store
     * @param x input (..., in)
     * @param first a projection
     * @param second a projection of the same input
     * @param training whether this is a training pass
     * @return {@code first(x)} and {@code second(x)}, each (..., out)
     */
    public static NDArray[] forwardPair(
            ParameterStore store, NDArray x, Linear first, Linear second, boolean training) {
        NDArray[] out = first.kernels().projectPair(x, first.projection, second.projection, store, training);
        return withLora(store, x, out, training, first, second);
    }

    /**
     * Projections of the same input, which the kernels may compute at once ({@link
     * Kernels#projectAll}): attention's query, key and value.
     *
     * @param store the parameter store
     * @param x input (..., in)
     * @param training whether this is a training pass
     * @param projections projections of the same input
     * @return {@code projections[i](x)}, each (..., out_i)
     */
    public static NDArray[] forwardAll(ParameterStore store, NDArray x, boolean training, Linear... projections) {
        ProjectionWeight[] weights = new ProjectionWeight[projections.length];
        for (int i = 0; i < projections.length; i++) {
            weights[i] = projections[i].projection;
        }
        NDArray[] out = projections[0].kernels().projectAll(x, weights, store, training);
        return withLora(store, x, out, training, projections);
    }

    /** Each projection's LoRA update added to its output. */
    private static NDArray[] withLora(
            ParameterStore store, NDArray x, NDArray[] out, boolean training, Linear... projections) {
        for (int i = 0; i < projections.length; i++) {
            out[i] = projections[i].lora.apply(projections[i].kernels(), store, x, out[i], training);
        }
        return out;
    }

    /** @return the weight and bias as the kernels take them */
    ProjectionWeight projection() {
        return projection;
    }

    /** @return the LoRA pairs attached to this projection */
    LoraSlot loraSlot() {
        return lora;
    }

    /** @return the weight parameter, shape (out, in) */
    public Parameter weight() {
        return projection.weightParameter();
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape in = inputShapes[0];
        return new Shape[] {in.slice(0, in.dimension() - 1).add(outFeatures)};
    }
}
