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
