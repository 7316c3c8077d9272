package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.GemmaLayout;
import io.github.djlllmzoo.blocks.config.LlamaConfig;

/**
 * Llama-family causal self-attention with {@code num_key_value_heads <= num_attention_heads}
 * (multi-head, grouped-query or, with one key/value head, multi-query attention): projections
 * {@code q_proj, k_proj, v_proj} (Phi-3: one {@code qkv_proj} whose rows are q's, then k's, then
 * v's) and {@code o_proj}, with biases as the config says; a sliding window where the config gives
 * the layer one, its keys those its cache returns and its mask {@link AttentionContext#mask(int)};
 * per-head RMSNorms {@code q_norm}, {@code k_norm} over {@code head_dim} (Qwen3; Gemma 3's {@code 1 +
 * w} form); rotary position embedding on queries and keys (the rotary embedding the model hands
 * each layer: Gemma 3's local layers have their own); attention scaled by 1/sqrt(head_dim), or as
 * Gemma says ({@code query_pre_attn_scalar}, soft-capping: {@link AttentionScores}). The KV cache stores only the key/value heads; attention ({@link
 * Kernels#attend}) groups the query heads over them without copying.
 */
public final class GroupedQueryAttention extends AttentionBlock {

    private final int layerIndex;
    private final int window;
    private final AttentionScores scores;
    private final int numHeads;
    private final int numKvHeads;
    private final int headDim;
    private final float attentionDropout;
    private final RotaryEmbedding rotaryEmbedding;
    private final Linear qProj;
    private final Linear kProj;
    private final Linear vProj;
    private final Linear qkvProj;
    private final Linear oProj;
    private final RmsNorm qNorm;
    private final RmsNorm kNorm;

    /**
     * @param config the model config
     * @param layerIndex the index of the layer this attention belongs to (its slot in the cache)
     * @param rotaryEmbedding the rotary embedding of this layer (shared by the layers of its kind)
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
        this.window = config.slidingWindow(layerIndex);
        GemmaLayout gemma = config.gemma();
        this.scores =
                gemma == null
                        ? AttentionScores.standard(config.headDim())
                        : new AttentionScores(1.0 / Math.sqrt(gemma.queryPreAttnScalar()), gemma.attnLogitSoftcapping());
        this.numHeads = config.numAttentionHeads();
        this.numKvHeads = config.numKeyValueHeads();
        this.headDim = config.headDim();
        this.attentionDropout = config.attentionDropout();
        this.rotaryEmbedding = rotaryEmbedding;
        int e = config.hiddenSize();
        boolean bias = config.qkvBias();
        float std = config.initializerRange();
        if (config.fusedProjections()) {
            qkvProj =
                    addChildBlock(
                            "qkv_proj",
                            new Linear(e, (numHeads + 2 * numKvHeads) * headDim, bias, std));
            qProj = null;
            kProj = null;
            vProj = null;
        } else {
            qkvProj = null;
            qProj = addChildBlock("q_proj", new Linear(e, numHeads * headDim, bias, std));
            kProj = addChildBlock("k_proj", new Linear(e, numKvHeads * headDim, bias, std));
            vProj = addChildBlock("v_proj", new Linear(e, numKvHeads * headDim, bias, std));
        }
        oProj =
                addChildBlock(
                        "o_proj", new Linear(numHeads * headDim, e, config.attentionBias(), std));
        if (config.qkNorm()) {
            qNorm = addChildBlock("q_norm", norm(config));
            kNorm = addChildBlock("k_norm", norm(config));
        } else {
            qNorm = null;
            kNorm = null;
        }
    }

    private RmsNorm norm(LlamaConfig config) {
        return config.gemma() != null
                ? RmsNorm.gemma(headDim, config.rmsNormEps())
                : new RmsNorm(headDim, config.rmsNormEps());
    }

    /** @return the rotary embedding this layer rotates queries and keys with */
    public RotaryEmbedding rotaryEmbedding() {
        return rotaryEmbedding;
    }

    /** @return how this layer's products {@code q·k} become scores */
    public AttentionScores scores() {
        return scores;
    }

    @Override
    public NDArray forward(
            ParameterStore store, NDArray x, AttentionContext context, boolean training) {
        NDArray y = attended(store, x, project(store, x, training), context, training); // (B, T, H*D)
        return oProj.forward(store, y, training); // (B, T, E)
    }

    @Override
    NDArray forwardAdding(
            ParameterStore store, NDArray x, AttentionContext context, NDArray residual, boolean training) {
        NDArray y = attended(store, x, project(store, x, training), context, training); // (B, T, H*D)
        return outputAdding(store, y, residual, training);
    }

    @Override
    NDArray forwardNormedAdding(
            ParameterStore store, UnaryBlock norm, NDArray x, AttentionContext context, boolean training) {
        if (!(norm instanceof RmsNorm rms) || qkvProj != null
                || qProj.loraSlot().adapts() || kProj.loraSlot().adapts() || vProj.loraSlot().adapts()) {
            return super.forwardNormedAdding(store, norm, x, context, training);
        }
        long b = x.getShape().get(0);
        long t = x.getShape().get(1);
        Shape[] shapes = t == 1 // at one position the rows are the heads: the products may be made as heads
                ? new Shape[] {new Shape(b, numHeads, 1, headDim), new Shape(b, numKvHeads, 1, headDim),
                        new Shape(b, numKvHeads, 1, headDim)}
                : new Shape[] {new Shape(b, t, (long) numHeads * headDim), new Shape(b, t, (long) numKvHeads * headDim),
                        new Shape(b, t, (long) numKvHeads * headDim)};
        ProjectionWeight[] weights = {qProj.projection(), kProj.projection(), vProj.projection()};
        if (t == 1 && qNorm == null) { // nothing between the products and the rotation
            NDList cosSin = rotaryEmbedding.cosSin(context.positionIds(), context.modelManager(), x.getDataType());
            NDArray[] rotated = kernels().normedProjectRotate(
                    x, rms.scale(store, x, training), rms.eps(), rms.unitOffset(), weights, shapes, cosSin, store,
                    training);
            return outputAdding(store, attendedRotated(rotated, b, t, context, training), x, training);
        }
        NDArray[] qkv = kernels().normedProjectAll(
                x, rms.scale(store, x, training), rms.eps(), rms.unitOffset(), weights, shapes, store, training);
        return outputAdding(store, attended(store, x, qkv, context, training), x, training);
    }

    /**
     * {@code o_proj(y) + residual}, (B, T, E): the frozen product added to the residual as without an
     * adapter, then the LoRA update where one adapts {@code o_proj}.
     */
    private NDArray outputAdding(ParameterStore store, NDArray y, NDArray residual, boolean training) {
        NDArray sum = kernels().projectAdd(y, oProj.projection(), residual, store, training); // (B, T, E)
        return oProj.loraSlot().apply(kernels(), store, y, sum, training);
    }

    /**
     * The heads' attention output before {@code o_proj}, (B, T, H*D).
     *
     * @param x the attention's input (B, T, E), or the residual stream it is the norm of: its shape
     * @param qkv queries (B, T, H*D), keys and values (B, T, Hkv*D), or at T = 1 already as heads
     *     (B, H, 1, D) and (B, Hkv, 1, D)
     */
    private NDArray attended(
            ParameterStore store, NDArray x, NDArray[] qkv, AttentionContext context, boolean training) {
        long b = x.getShape().get(0);
        long t = x.getShape().get(1);
        NDArray q = heads(qkv[0], b, t, numHeads, headDim); // (B, H, T, D)
        NDArray k = heads(qkv[1], b, t, numKvHeads, headDim); // (B, Hkv, T, D)
        NDArray v = heads(qkv[2], b, t, numKvHeads, headDim); // (B, Hkv, T, D)
        if (qNorm != null) {
            q = qNorm.forward(store, q, training);
            k = kNorm.forward(store, k, training);
        }
        NDList cosSin = rotaryEmbedding.cosSin(context.positionIds(), context.modelManager(), q.getDataType());
        NDArray[] rotated = kernels().rotate(q, k, cosSin, training);
        return attendedRotated(new NDArray[] {rotated[0], rotated[1], v}, b, t, context, training);
    }

    /**
     * The heads' attention output before {@code o_proj}, (B, T, H*D), from rotated queries (B, H, T,
     * D) and keys, and values (B, Hkv, T, D).
     */
    private NDArray attendedRotated(NDArray[] qkv, long b, long t, AttentionContext context, boolean training) {
        KeyValues kv = context.update(layerIndex, qkv[1], qkv[2]); // (B, H_kv, S, D)
        NDArray mask = context.mask(window);
        NDArray y = kernels().attend(qkv[0], kv, mask, scores, attentionDropout, training); // (B, H, T, D)
        return merged(y, b, t, (long) numHeads * headDim); // (B, T, H*D)
    }

    /** @return queries (B, T, H*D), keys and values (B, T, Hkv*D) */
    private NDArray[] project(ParameterStore store, NDArray x, boolean training) {
        if (qkvProj == null) {
            return Linear.forwardAll(store, x, training, qProj, kProj, vProj);
        }
        long queries = (long) numHeads * headDim;
        long keys = (long) numKvHeads * headDim;
        NDArray fused = qkvProj.forward(store, x, training); // (B, T, (H + 2 Hkv) * D)
        NDList parts = fused.split(new long[] {queries, queries + keys}, 2);
        return new NDArray[] {parts.get(0), parts.get(1), parts.get(2)};
    }
}
