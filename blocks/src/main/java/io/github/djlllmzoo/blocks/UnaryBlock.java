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

    /**
     * The block's output added to a residual stream, as a layer's skip connection takes it; a block
     * whose last operation is a projection adds it there ({@link Kernels#projectAdd}).
     *
     * @param store the parameter store, or {@code null}
     * @param x the input; results are attached to its manager
     * @param residual the residual stream, of the output's shape; not to be read afterwards (it may
     *     be the result, updated in place)
     * @param training whether this is a training pass
     * @return {@code forward(x) + residual}
     */
    NDArray forwardAdding(ParameterStore store, NDArray x, NDArray residual, boolean training) {
        return forward(store, x, training).addi(residual); // the output is fresh: it takes the sum
    }

    /**
     * {@link #forwardAdding} of {@code norm(x)} onto {@code x}: a pre-norm layer's sublayer and skip
     * connection, which a block whose first products take the normed input may compute with the
     * norm inside them ({@link Kernels#normedGatedProject}).
     *
     * @param store the parameter store, or {@code null}
     * @param norm the norm before this block
     * @param x the residual stream, the norm's input; not to be read afterwards (it may be the
     *     result, updated in place)
     * @param training whether this is a training pass
     * @return {@code forward(norm(x)) + x}
     */
    NDArray forwardNormedAdding(ParameterStore store, UnaryBlock norm, NDArray x, boolean training) {
        return forwardAdding(store, norm.forward(store, x, training), x, training);
    }

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
