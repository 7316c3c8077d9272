package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;

/**
 * Root-mean-square normalization over the last axis with a learned scale, as Hugging Face's {@code
 * LlamaRMSNorm}: {@code weight * (x * rsqrt(mean(x^2) + eps))}, the statistics computed in float32
 * even for half-precision inputs. Gemma's variant ({@link #gemma}, {@code GemmaRMSNorm}) scales by
 * {@code 1 + weight} instead, in float32 before rounding back to the input's type.
 */
public final class RmsNorm extends UnaryBlock {

    private final float eps;
    private final boolean unitOffset;
    private final Parameter weight;

    /**
     * @param width the size of the last axis
     * @param eps the epsilon added to the mean square ({@code rms_norm_eps})
     */
    public RmsNorm(int width, float eps) {
        this(width, eps, false);
    }

    private RmsNorm(int width, float eps, boolean unitOffset) {
        this.eps = eps;
        this.unitOffset = unitOffset;
        // Gemma's weight is an offset from 1, initialized to 0 as in GemmaRMSNorm
        Parameter.Type type = unitOffset ? Parameter.Type.BETA : Parameter.Type.GAMMA;
        weight = declare("weight", type, new Shape(width), type.getInitializer());
    }

    /**
     * Gemma's RMSNorm: {@code x * rsqrt(mean(x^2) + eps) * (1 + weight)}.
     *
     * @param width the size of the last axis
     * @param eps the epsilon added to the mean square ({@code rms_norm_eps})
     * @return the norm
     */
    public static RmsNorm gemma(int width, float eps) {
        return new RmsNorm(width, eps, true);
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
        if (unitOffset) {
            NDArray scale = (widen ? w.toType(DataType.FLOAT32, false) : w).add(Scalars.of(1, h));
            NDArray scaled = normed.mul(scale);
            return widen ? scaled.toType(inputType, false) : scaled;
        }
        return (widen ? normed.toType(inputType, false) : normed).mul(w);
    }
}
