package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * A causal self-attention layer: maps (B, T, E) to (B, T, E) given an {@link AttentionContext}.
 * Its plain DJL {@code forward} runs full causal attention over the input without a cache.
 */
public abstract class AttentionBlock extends ConfiguredBlock {

    /**
     * Applies attention.
     *
     * @param store the parameter store, or {@code null}
     * @param x the input (B, T, E); results are attached to its manager
     * @param context positions, mask and cache for this pass
     * @param training whether this is a training pass (enables dropout)
     * @return the output (B, T, E)
     */
    public abstract NDArray forward(
            ParameterStore store, NDArray x, AttentionContext context, boolean training);

    /**
     * The attention's output added to the residual stream, as a layer's skip connection takes it;
     * an attention whose last operation is its output projection adds it there ({@link
     * Kernels#projectAdd}).
     *
     * @param store the parameter store, or {@code null}
     * @param x the input (B, T, E); results are attached to its manager
     * @param context positions, mask and cache for this pass
     * @param residual the residual stream (B, T, E); not to be read afterwards (it may be the
     *     result, updated in place)
     * @param training whether this is a training pass
     * @return {@code forward(x) + residual}
     */
    NDArray forwardAdding(
            ParameterStore store, NDArray x, AttentionContext context, NDArray residual, boolean training) {
        return forward(store, x, context, training).addi(residual); // the output is fresh: it takes the sum
    }

    /**
     * {@link #forwardAdding} of {@code norm(x)} onto {@code x}: a pre-norm layer's attention and skip
     * connection, which an attention whose first products take the normed input may compute with
     * the norm inside them ({@link Kernels#normedProjectAll}).
     *
     * @param store the parameter store, or {@code null}
     * @param norm the norm before the attention
     * @param x the residual stream (B, T, E), the norm's input; not to be read afterwards (it may
     *     be the result, updated in place)
     * @param context positions, mask and cache for this pass
     * @param training whether this is a training pass
     * @return {@code forward(norm(x)) + x}
     */
    NDArray forwardNormedAdding(
            ParameterStore store, UnaryBlock norm, NDArray x, AttentionContext context, boolean training) {
        return forwardAdding(store, norm.forward(store, x, training), context, x, training);
    }

    /**
     * Splits projected rows into heads: (B, T, count·D) as (B, count, T, D). At T = 1 the rows are
     * already in that order, and one reshape (one engine call) does it.
     *
     * @param x projected rows (B, T, count·D), or at T = 1 heads (B, count, 1, D) already, which
     *     come back as they are
     * @param b the batch size
     * @param t the positions
     * @param count the heads
     * @param headDim the head width D
     * @return (B, count, T, D)
     */
    protected static NDArray heads(NDArray x, long b, long t, long count, long headDim) {
        if (t == 1 && x.getShape().dimension() == 4) {
            return x;
        }
        if (t == 1) {
            return x.reshape(b, count, 1, headDim);
        }
        return x.reshape(b, t, count, headDim).transpose(0, 2, 1, 3);
    }

    /**
     * Joins heads into rows, the inverse of {@link #heads}: (B, H, T, D) as (B, T, H·D).
     *
     * @param y heads (B, H, T, D)
     * @param b the batch size
     * @param t the positions
     * @param width H·D
     * @return (B, T, H·D)
     */
    protected static NDArray merged(NDArray y, long b, long t, long width) {
        if (t == 1) {
            return y.reshape(b, 1, width);
        }
        return y.transpose(0, 2, 1, 3).reshape(b, t, width);
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
