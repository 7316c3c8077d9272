package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/** A configured block with one input and one output array, e.g. a norm, a projection, an MLP. */
public abstract class UnaryBlock extends ConfiguredBlock {

    /**
     * Applies the block.
     *
     * @param store the parameter store, or {@code null} to use the parameters' own arrays
     * @param x the input; results are attached to its manager
     * @param training whether this is a training pass (enables dropout)
     * @return the output
     */
    public abstract NDArray forward(ParameterStore store, NDArray x, boolean training);

    @Override
    protected NDList forwardInternal(
            ParameterStore store, NDList inputs, boolean training, PairList<String, Object> params) {
        return new NDList(forward(store, inputs.singletonOrThrow(), training));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return inputShapes;
    }
}
