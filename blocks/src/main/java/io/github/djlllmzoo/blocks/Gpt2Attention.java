package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.Gpt2Config;

/**
 * GPT-2's attention (Hugging Face's {@code GPT2Attention}): multi-head causal self-attention with
 * one fused projection {@code c_attn} to queries, keys and values (with biases), attention scaled
 * by 1/sqrt(head_dim), output projection {@code c_proj}, attention and residual dropout in training.
 */
public final class Gpt2Attention extends AttentionBlock {

    private final int layerIndex;
    private final int numHeads;
    private final int headDim;
    private final float attnDropout;
    private final float residDropout;
    private final Conv1D cAttn;
    private final Conv1D cProj;

    /**
     * @param config the model config
     * @param layerIndex the index of the layer this attention belongs to (its slot in the cache)
     */
    public Gpt2Attention(Gpt2Config config, int layerIndex) {
        this.layerIndex = layerIndex;
        this.numHeads = config.nHead();
        this.headDim = config.headDim();
        this.attnDropout = config.attnPdrop();
        this.residDropout = config.residPdrop();
        int e = config.nEmbd();
        cAttn = addChildBlock("c_attn", new Conv1D(e, 3 * e, Gpt2Config.INITIALIZER_RANGE));
        cProj = addChildBlock("c_proj", new Conv1D(e, e, config.residualInitializerRange()));
    }

    @Override
    public NDArray forward(
            ParameterStore store, NDArray x, AttentionContext context, boolean training) {
        return Dropouts.apply(cProj.forward(store, attended(store, x, context, training), training), residDropout,
                training);
    }

    @Override
    NDArray forwardAdding(
            ParameterStore store, NDArray x, AttentionContext context, NDArray residual, boolean training) {
        if ((training && residDropout > 0) || cProj.loraSlot().adapts()) {
            return forward(store, x, context, training).addi(residual);
        }
        // (B, T, E)
        return kernels().projectAdd(attended(store, x, context, training), cProj.projection(), residual, store, training);
    }

    /** The heads' attention output before {@code c_proj}, (B, T, E). */
    private NDArray attended(ParameterStore store, NDArray x, AttentionContext context, boolean training) {
        long b = x.getShape().get(0);
        long t = x.getShape().get(1);
        long e = x.getShape().get(2);
        NDList qkv = heads(cAttn.forward(store, x, training), b, t, 3 * numHeads, headDim).split(3, 1); // 3 × (B, H, T, D)
        NDArray q = qkv.get(0);
        NDArray k = qkv.get(1);
        NDArray v = qkv.get(2);
        KeyValues kv = context.update(layerIndex, k, v); // (B, H_kv, S, D)
        NDArray y = kernels().attend(q, kv, context.mask(), attnDropout, training); // (B, H, T, D)
        return merged(y, b, t, e); // (B, T, E)
    }
}
