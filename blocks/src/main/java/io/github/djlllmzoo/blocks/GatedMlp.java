package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.training.ParameterStore;

/**
 * The SwiGLU feed-forward network of Llama-family models: {@code down_proj(silu(gate_proj(x)) *
 * up_proj(x))}.
 */
public final class GatedMlp extends UnaryBlock {

    private final Linear gateProj;
    private final Linear upProj;
    private final Linear downProj;

    /**
     * @param hiddenSize the residual width ({@code hidden_size})
     * @param intermediateSize the inner width ({@code intermediate_size})
     * @param withBias whether the three projections have biases ({@code mlp_bias})
     * @param initStd standard deviation of the weight initializer ({@code initializer_range})
     */
    public GatedMlp(int hiddenSize, int intermediateSize, boolean withBias, float initStd) {
        gateProj =
                addChildBlock(
                        "gate_proj", new Linear(hiddenSize, intermediateSize, withBias, initStd));
        upProj =
                addChildBlock(
                        "up_proj", new Linear(hiddenSize, intermediateSize, withBias, initStd));
        downProj =
                addChildBlock(
                        "down_proj", new Linear(intermediateSize, hiddenSize, withBias, initStd));
    }

    @Override
    public NDArray forward(ParameterStore store, NDArray x, boolean training) {
        NDArray[] gateAndUp = Linear.forwardPair(store, x, gateProj, upProj, training);
        NDArray gate = gateAndUp[0]; // gate_proj(x), (B, T, I)
        NDArray up = gateAndUp[1]; // up_proj(x), (B, T, I)
        return downProj.forward(store, Activations.silu(gate).mul(up), training); // (B, T, E)
    }
}
