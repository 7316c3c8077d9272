package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.LlamaConfig;

/**
 * Llama-family causal self-attention with {@code num_key_value_heads <= num_attention_heads}
 * (multi-head, grouped-query or, with one key/value head, multi-query attention): separate
 * projections {@code q_proj, k_proj, v_proj, o_proj} (with biases when {@code attention_bias}),
 * rotary position embedding on queries and keys, attention scaled by 1/sqrt(head_dim). The KV cache
 * stores only the key/value heads; attention ({@link Kernels#attend}) groups the query heads over
 * them without copying.
 */
public final class GroupedQueryAttention extends AttentionBlock {

    private final int layerIndex;
    private final int numHeads;
    private final int numKvHeads;
    private final int headDim;
    private final float attentionDropout;
    private final RotaryEmbedding rotaryEmbedding;
    private final Linear qProj;
    private final Linear kProj;
    private final Linear vProj;
    private final Linear oProj;

    /**
     * @param config the model config
     * @param layerIndex the index of the layer this attention belongs to (its slot in the cache)
     * @param rotaryEmbedding the model's rotary embedding, shared by all layers
     */
    public GroupedQueryAttention(
            LlamaConfig config, int layerIndex, RotaryEmbedding rotaryEmbedding) {
        if (rotaryEmbedding.headDim() != config.headDim()) {
            throw new IllegalArgumentException(
                    "rotary embedding width "
                            + rotaryEmbedding.headDim()
                            + " != head_dim "
                            + config.headDim());
        }
        this.layerIndex = layerIndex;
        this.numHeads = config.numAttentionHeads();
        this.numKvHeads = config.numKeyValueHeads();
        this.headDim = config.headDim();
        this.attentionDropout = config.attentionDropout();
        this.rotaryEmbedding = rotaryEmbedding;
        int e = config.hiddenSize();
        boolean bias = config.attentionBias();
        float std = config.initializerRange();
        qProj = addChildBlock("q_proj", new Linear(e, numHeads * headDim, bias, std));
        kProj = addChildBlock("k_proj", new Linear(e, numKvHeads * headDim, bias, std));
        vProj = addChildBlock("v_proj", new Linear(e, numKvHeads * headDim, bias, std));
        oProj = addChildBlock("o_proj", new Linear(numHeads * headDim, e, bias, std));
    }

    @Override
    public NDArray forward(
            ParameterStore store, NDArray x, AttentionContext context, boolean training) {
        long b = x.getShape().get(0);
        long t = x.getShape().get(1);
        NDArray q = heads(qProj.forward(store, x, training), b, t, numHeads); // (B, H, T, D)
        NDArray[] keyValue = Linear.forwardPair(store, x, kProj, vProj, training);
        NDArray k = heads(keyValue[0], b, t, numKvHeads); // (B, Hkv, T, D)
        NDArray v = heads(keyValue[1], b, t, numKvHeads); // (B, Hkv, T, D)
        NDList cosSin = rotaryEmbedding.cosSin(context.positionIds(), context.modelManager(), q.getDataType());
        q = RotaryEmbedding.rotate(q, cosSin);
        k = RotaryEmbedding.rotate(k, cosSin);
        KeyValues kv = context.update(layerIndex, k, v); // (B, H_kv, S, D)
        NDArray y = kernels().attend(q, kv, context.mask(), attentionDropout, training); // (B, H, T, D)
        y = y.transpose(0, 2, 1, 3).reshape(b, t, (long) numHeads * headDim); // (B, T, H*D)
        return oProj.forward(store, y, training); // (B, T, E)
    }

    private NDArray heads(NDArray x, long b, long t, int count) {
        return x.reshape(b, t, count, headDim).transpose(0, 2, 1, 3); // (B, count, T, D)
    }
}
