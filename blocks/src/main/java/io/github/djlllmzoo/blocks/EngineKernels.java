package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.HiddenActivation;

/**
 * The reference {@link Kernels}: every operation as the engine's own NDArray calls, on any engine,
 * device and type, recording gradients in training. Blocks that are not part of a model, and models
 * for which no {@link KernelsProvider} applies, compute with these.
 */
public final class EngineKernels implements Kernels {

    /** The one instance (it has no state). */
    public static final EngineKernels INSTANCE = new EngineKernels();

    private EngineKernels() {}

    /**
     * The engine's product of {@code x} and a weight stored as {@code layout} says, plus the bias.
     *
     * @param x input (..., in); the result is attached to its manager
     * @param weight (out, in) or (in, out)
     * @param bias (out), or {@code null}
     * @param layout how {@code weight} is stored
     * @return (..., out)
     */
    public static NDArray product(NDArray x, NDArray weight, NDArray bias, ProjectionWeight.Layout layout) {
        if (layout == ProjectionWeight.Layout.OUT_IN) {
            return x.getNDArrayInternal().linear(x, weight, bias).singletonOrThrow();
        }
        NDArray product = x.matMul(weight);
        return bias == null ? product : product.addi(bias);
    }

    @Override
    public NDArray project(NDArray x, ProjectionWeight weight, ParameterStore store, boolean training) {
        NDArray w = weight.weight(store, x, training);
        NDArray product =
                product(
                        x,
                        w,
                        weight.bias(store, x.getDevice(), training),
                        weight.compressed() == null ? weight.layout() : ProjectionWeight.Layout.OUT_IN);
        if (weight.compressed() != null) {
            w.close(); // widened for this product only
        }
        return product;
    }

    @Override
    public NDArray[] projectPair(
            NDArray x, ProjectionWeight first, ProjectionWeight second, ParameterStore store, boolean training) {
        return new NDArray[] {project(x, first, store, training), project(x, second, store, training)};
    }

    @Override
    public NDArray attend(
            NDArray q, KeyValues kv, NDArray mask, AttentionScores scores, float dropout, boolean training) {
        return ScaledDotProductAttention.attend(q, kv.keys(), kv.values(), mask, scores, dropout, training);
    }

    @Override
    public NDArray rmsNorm(NDArray x, NDArray weight, float eps, boolean unitOffset, boolean training) {
        DataType inputType = x.getDataType();
        boolean widen = inputType != DataType.FLOAT32 && inputType != DataType.FLOAT64;
        NDArray h = widen ? x.toType(DataType.FLOAT32, false) : x;
        NDArray meanSquare = h.square().mean(new int[] {-1}, true); // (..., 1)
        // pow -0.5 is torch's rsqrt; constants from Scalars, not made per call
        NDArray normed = h.mul(meanSquare.addi(Scalars.of(eps, h)).pow(Scalars.of(-0.5, h)));
        if (unitOffset) {
            NDArray scale = (widen ? weight.toType(DataType.FLOAT32, false) : weight).add(Scalars.of(1, h));
            NDArray scaled = normed.mul(scale);
            return widen ? scaled.toType(inputType, false) : scaled;
        }
        return (widen ? normed.toType(inputType, false) : normed).mul(weight);
    }

    @Override
    public NDArray layerNorm(NDArray x, NDArray weight, NDArray bias, float eps, boolean training) {
        Shape normalized = new Shape(x.getShape().get(x.getShape().dimension() - 1));
        return x.getNDArrayInternal().layerNorm(x, normalized, weight, bias, eps).singletonOrThrow();
    }

    @Override
    public NDArray[] rotate(NDArray q, NDArray k, NDList cosSin, boolean training) {
        return new NDArray[] {RotaryEmbedding.rotate(q, cosSin), RotaryEmbedding.rotate(k, cosSin)};
    }

    @Override
    public NDArray activate(NDArray gate, NDArray up, HiddenActivation activation, boolean training) {
        NDArray activated =
                activation == HiddenActivation.SILU ? Activations.silu(gate) : Activations.geluNew(gate);
        return up == null ? activated : activated.mul(up);
    }

    @Override
    public void closeStep(NDManager step) {
        step.close();
    }

    @Override
    public String toString() {
        return "the engine's operations";
    }
}
