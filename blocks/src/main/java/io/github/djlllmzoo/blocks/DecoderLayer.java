package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * The pre-norm transformer layer both families use: {@code x + attn(norm1(x))}, then
 * {@code x + mlp(norm2(x))}. The children carry each family's checkpoint names (GPT-2:
 * {@code ln_1, attn, ln_2, mlp}; Llama: {@code input_layernorm, self_attn,
 * post_attention_layernorm, mlp}).
 */
public final class DecoderLayer extends ConfiguredBlock {

    private final UnaryBlock norm1;
    private final AttentionBlock attention;
    private final UnaryBlock norm2;
    private final UnaryBlock mlp;

    /**
     * @param names the checkpoint names of the four children, in order
     * @param norm1 the norm before attention
     * @param attention the attention
     * @param norm2 the norm before the MLP
     * @param mlp the feed-forward network
     */
    public DecoderLayer(
            String[] names, UnaryBlock norm1, AttentionBlock attention, UnaryBlock norm2, UnaryBlock mlp) {
        this.norm1 = addChildBlock(names[0], norm1);
        this.attention = addChildBlock(names[1], attention);
        this.norm2 = addChildBlock(names[2], norm2);
        this.mlp = addChildBlock(names[3], mlp);
    }

    /**
     * Applies the layer.
     *
     * @param store the parameter store, or {@code null}
     * @param x the residual stream (B, T, E)
     * @param context positions, mask and cache for this pass
     * @param training whether this is a training pass
     * @return the updated residual stream (B, T, E)
     */
    public NDArray forward(
            ParameterStore store, NDArray x, AttentionContext context, boolean training) {
        // The sublayer outputs are fresh arrays: adding the residual in place into them saves two
        // allocations per layer and leaves autograd nothing overwritten that it needs.
        NDArray h = attention.forward(store, norm1.forward(store, x, training), context, training).addi(x);
        return mlp.forward(store, norm2.forward(store, h, training), training).addi(h);
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore store, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        return new NDList(forward(store, x, AttentionContext.causal(x), training));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[0]};
    }
}
