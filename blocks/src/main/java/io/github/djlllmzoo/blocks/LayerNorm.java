package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;

/** Layer normalization over the last axis with a learned scale ({@code weight}) and shift ({@code bias}). */
public final class LayerNorm extends UnaryBlock {

    private final float eps;
    private final Parameter weight;
    private final Parameter bias;

    /**
     * @param width the size of the last axis
     * @param eps the epsilon added to the variance ({@code layer_norm_epsilon})
     */
    public LayerNorm(int width, float eps) {
        Shape normalizedShape = new Shape(width);
        this.eps = eps;
        weight =
                declare("weight", Parameter.Type.GAMMA, normalizedShape, Parameter.Type.GAMMA.getInitializer());
        bias = declare("bias", Parameter.Type.BETA, normalizedShape, Parameter.Type.BETA.getInitializer());
    }

    @Override
    public NDArray forward(ParameterStore store, NDArray x, boolean training) {
        NDArray w = value(store, weight, x.getDevice(), training);
        NDArray b = value(store, bias, x.getDevice(), training);
        return kernels().layerNorm(x, w, b, eps, training);
    }
}
