package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.HiddenActivation;

/**
 * The gated feed-forward network of Llama-family models: {@code down_proj(act(gate_proj(x)) *
 * up_proj(x))}, SwiGLU with {@code act} SiLU, Gemma's GeGLU with GELU-tanh. Phi-3 stores gate and
 * up as one {@code gate_up_proj}, the gate's rows first ({@link #fused}).
 */
public final class GatedMlp extends UnaryBlock {

    private final Linear gateProj;
    private final Linear upProj;
    private final Linear gateUpProj;
    private final Linear downProj;
    private final HiddenActivation activation;

    /**
     * @param hiddenSize the residual width ({@code hidden_size})
     * @param intermediateSize the inner width ({@code intermediate_size})
     * @param withBias whether the three projections have biases ({@code mlp_bias})
     * @param initStd standard deviation of the weight initializer ({@code initializer_range})
     */
    public GatedMlp(int hiddenSize, int intermediateSize, boolean withBias, float initStd) {
        this(hiddenSize, intermediateSize, withBias, initStd, HiddenActivation.SILU);
    }

    /**
     * @param hiddenSize the residual width ({@code hidden_size})
     * @param intermediateSize the inner width ({@code intermediate_size})
     * @param withBias whether the three projections have biases ({@code mlp_bias})
     * @param initStd standard deviation of the weight initializer ({@code initializer_range})
     * @param activation the gate's activation
     */
    public GatedMlp(
            int hiddenSize, int intermediateSize, boolean withBias, float initStd, HiddenActivation activation) {
        this(hiddenSize, intermediateSize, withBias, initStd, activation, false);
    }

    private GatedMlp(
            int hiddenSize,
            int intermediateSize,
            boolean withBias,
            float initStd,
            HiddenActivation activation,
            boolean fused) {
        this.activation = activation;
        if (fused) {
            gateUpProj =
                    addChildBlock(
                            "gate_up_proj",
                            new Linear(hiddenSize, 2 * intermediateSize, withBias, initStd));
            gateProj = null;
            upProj = null;
        } else {
            gateUpProj = null;
            gateProj =
                    addChildBlock(
                            "gate_proj",
                            new Linear(hiddenSize, intermediateSize, withBias, initStd));
            upProj =
                    addChildBlock(
                            "up_proj", new Linear(hiddenSize, intermediateSize, withBias, initStd));
        }
        downProj =
                addChildBlock(
                        "down_proj", new Linear(intermediateSize, hiddenSize, withBias, initStd));
    }

    /**
     * The MLP with gate and up stored as one projection {@code gate_up_proj} of {@code 2 *
     * intermediateSize} rows, the gate's first (Hugging Face's {@code Phi3MLP}).
     *
     * @param hiddenSize the residual width ({@code hidden_size})
     * @param intermediateSize the inner width ({@code intermediate_size})
     * @param withBias whether the projections have biases
     * @param initStd standard deviation of the weight initializer ({@code initializer_range})
     * @return the MLP
     */
    public static GatedMlp fused(
            int hiddenSize, int intermediateSize, boolean withBias, float initStd) {
        return new GatedMlp(hiddenSize, intermediateSize, withBias, initStd, HiddenActivation.SILU, true);
    }

    @Override
    public NDArray forward(ParameterStore store, NDArray x, boolean training) {
        return downProj.forward(store, activated(store, x, training), training); // (B, T, E)
    }

    @Override
    NDArray forwardNormedAdding(ParameterStore store, UnaryBlock norm, NDArray x, boolean training) {
        if (!(norm instanceof RmsNorm rms) || !unadaptedPair()) {
            return super.forwardNormedAdding(store, norm, x, training);
        }
        NDArray activated = kernels().normedGatedProject(
                x, rms.scale(store, x, training), rms.eps(), rms.unitOffset(), gateProj.projection(),
                upProj.projection(), activation, store, training); // (B, T, I)
        return forwardActivatedAdding(store, activated, x, training);
    }

    @Override
    NDArray forwardAdding(ParameterStore store, NDArray x, NDArray residual, boolean training) {
        return forwardActivatedAdding(store, activated(store, x, training), residual, training);
    }

    /**
     * {@code down_proj(activated) + residual}, (B, T, E): the frozen product added to the residual as
     * without an adapter, then the LoRA update where one adapts {@code down_proj}.
     */
    private NDArray forwardActivatedAdding(
            ParameterStore store, NDArray activated, NDArray residual, boolean training) {
        NDArray sum = kernels().projectAdd(activated, downProj.projection(), residual, store, training); // (B, T, E)
        return downProj.loraSlot().apply(kernels(), store, activated, sum, training);
    }

    /** Whether gate and up are two projections without LoRA adapters, which the kernels take as they are. */
    private boolean unadaptedPair() {
        return gateUpProj == null && !gateProj.loraSlot().adapts() && !upProj.loraSlot().adapts();
    }

    /** {@code act(gate_proj(x)) * up_proj(x)}, (B, T, I). */
    private NDArray activated(ParameterStore store, NDArray x, boolean training) {
        if (unadaptedPair()) {
            return kernels().gatedProject(x, gateProj.projection(), upProj.projection(), activation, store, training);
        }
        NDArray gate; // gate_proj(x), (B, T, I)
        NDArray up; // up_proj(x), (B, T, I)
        if (gateUpProj == null) {
            NDArray[] gateAndUp = Linear.forwardPair(store, x, gateProj, upProj, training);
            gate = gateAndUp[0];
            up = gateAndUp[1];
        } else {
            NDArray gateUp = gateUpProj.forward(store, x, training); // (..., 2I)
            NDList halves = gateUp.split(2, gateUp.getShape().dimension() - 1); // 2 x (..., I)
            gate = halves.get(0);
            up = halves.get(1);
        }
        return kernels().activate(gate, up, activation, training); // act(gate) * up
    }
}
