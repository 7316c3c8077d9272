package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
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
        return kernels().rmsNorm(x, scale(store, x, training), eps, unitOffset, training);
    }

    /**
     * @param store the parameter store, or {@code null}
     * @param x the input, on the device the scale is wanted on
     * @param training whether this is a training pass
     * @return the scale (W) as {@link Kernels#rmsNorm} takes it
     */
    NDArray scale(ParameterStore store, NDArray x, boolean training) {
        return value(store, weight, x.getDevice(), training);
    }

    /** @return the epsilon added to the mean square */
    float eps() {
        return eps;
    }

    /** @return whether the scale is {@code 1 + weight} (Gemma) */
    boolean unitOffset() {
        return unitOffset;
    }
}
