package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;

/**
 * Root-mean-square normalization over the last axis with a learned scale, as Hugging Face's {@code
 * LlamaRMSNorm}: {@code weight * (x * rsqrt(mean(x^2) + eps))}, the statistics computed in float32
 * even for half-precision inputs.
 */
public final class RmsNorm extends UnaryBlock {

    private final float eps;
    private final Parameter weight;

    /**
     * @param width the size of the last axis
     * @param eps the epsilon added to the mean square ({@code rms_norm_eps})
     */
    public RmsNorm(int width, float eps) {
        this.eps = eps;
        weight =
                declare(
                        "weight",
                        Parameter.Type.GAMMA,
                        new Shape(width),
                        Parameter.Type.GAMMA.getInitializer());
    }

    @Override
    public NDArray forward(ParameterStore store, NDArray x, boolean training) {
        NDArray w = value(store, weight, x.getDevice(), training);
        DataType inputType = x.getDataType();
        boolean widen = inputType != DataType.FLOAT32 && inputType != DataType.FLOAT64;
        NDArray h = widen ? x.toType(DataType.FLOAT32, false) : x;
        NDArray meanSquare = h.square().mean(new int[] {-1}, true); // (..., 1)
        // pow -0.5 is torch's rsqrt; constants from Scalars, not made per call
        NDArray normed = h.mul(meanSquare.addi(Scalars.of(eps, h)).pow(Scalars.of(-0.5, h)));
        return (widen ? normed.toType(inputType, false) : normed).mul(w);
    }
}
