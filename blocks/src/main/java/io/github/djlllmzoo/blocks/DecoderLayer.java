package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * The pre-norm transformer layer every family uses: {@code x + attn(norm1(x))}, then
 * {@code x + mlp(norm2(x))}. The children carry each family's checkpoint names (GPT-2:
 * {@code ln_1, attn, ln_2, mlp}; Llama: {@code input_layernorm, self_attn,
 * post_attention_layernorm, mlp}). Gemma 2 and 3 also norm each sublayer's output before the
 * residual ({@link #sandwich}): {@code x + postAttn(attn(norm1(x)))}, then {@code x +
 * postMlp(mlp(norm2(x)))}.
 */
public final class DecoderLayer extends ConfiguredBlock {

    private final UnaryBlock norm1;
    private final AttentionBlock attention;
    private final UnaryBlock norm2;
    private final UnaryBlock mlp;
    private final UnaryBlock postAttentionNorm;
    private final UnaryBlock postMlpNorm;

    /**
     * @param names the checkpoint names of the four children, in order
     * @param norm1 the norm before attention
     * @param attention the attention
     * @param norm2 the norm before the MLP
     * @param mlp the feed-forward network
     */
    public DecoderLayer(
            String[] names, UnaryBlock norm1, AttentionBlock attention, UnaryBlock norm2, UnaryBlock mlp) {
        this(names, norm1, attention, null, norm2, mlp, null);
    }

    private DecoderLayer(
            String[] names,
            UnaryBlock norm1,
            AttentionBlock attention,
            UnaryBlock postAttentionNorm,
            UnaryBlock norm2,
            UnaryBlock mlp,
            UnaryBlock postMlpNorm) {
        this.norm1 = addChildBlock(names[0], norm1);
        this.attention = addChildBlock(names[1], attention);
        this.postAttentionNorm = postAttentionNorm == null ? null : addChildBlock(names[4], postAttentionNorm);
        this.norm2 = addChildBlock(names[2], norm2);
        this.mlp = addChildBlock(names[3], mlp);
        this.postMlpNorm = postMlpNorm == null ? null : addChildBlock(names[5], postMlpNorm);
    }

    /**
     * A layer whose sublayer outputs are normed before the residual (Gemma 2's {@code
     * Gemma2DecoderLayer}).
     *
     * @param names the checkpoint names of norm1, attention, norm2, mlp, postAttentionNorm and
     *     postMlpNorm, in that order
     * @param norm1 the norm before attention
     * @param attention the attention
     * @param postAttentionNorm the norm of the attention's output
     * @param norm2 the norm before the MLP
     * @param mlp the feed-forward network
     * @param postMlpNorm the norm of the MLP's output
     * @return the layer
     */
    public static DecoderLayer sandwich(
            String[] names,
            UnaryBlock norm1,
            AttentionBlock attention,
            UnaryBlock postAttentionNorm,
            UnaryBlock norm2,
            UnaryBlock mlp,
            UnaryBlock postMlpNorm) {
        return new DecoderLayer(names, norm1, attention, postAttentionNorm, norm2, mlp, postMlpNorm);
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
        return forward(store, x, context, false, training);
    }

    /**
     * Applies the layer to a residual stream the caller may hand over: a model's own stream
     * between its layers, which the attention's output projection may then add into in place
     * ({@link AttentionBlock#forwardAdding}) rather than into an array of its own.
     *
     * @param store the parameter store, or {@code null}
     * @param x the residual stream (B, T, E)
     * @param context positions, mask and cache for this pass
     * @param handedOver whether {@code x} is a dense array of this pass that nothing reads after
     *     this call (not a view of a weight, not the caller's input): the layer may overwrite it
     * @param training whether this is a training pass
     * @return the updated residual stream (B, T, E)
     */
    NDArray forward(
            ParameterStore store, NDArray x, AttentionContext context, boolean handedOver, boolean training) {
        // The sublayer outputs are fresh arrays: adding the residual in place into them saves two
        // allocations per layer and leaves autograd nothing overwritten that it needs.
        NDArray h;
        if (handedOver && postAttentionNorm == null) {
            h = attention.forwardNormedAdding(store, norm1, x, context, training); // x is not read again
        } else {
            NDArray attended = attention.forward(store, norm1.forward(store, x, training), context, training);
            if (postAttentionNorm != null) {
                attended = postAttentionNorm.forward(store, attended, training);
            }
            h = attended.addi(x);
        }
        if (postMlpNorm == null) {
            return mlp.forwardNormedAdding(store, norm2, h, training); // h is not read again
        }
        return postMlpNorm.forward(store, mlp.forward(store, norm2.forward(store, h, training), training), training)
                .addi(h);
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
