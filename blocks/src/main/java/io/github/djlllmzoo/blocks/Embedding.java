package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.ndarray.types.SparseFormat;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.NormalInitializer;

/**
 * A lookup table from ids to vectors ({@code weight} of shape (count, width)). Used for token
 * embeddings and GPT-2's learned position embeddings; a tied LM head reads the same weight.
 */
public final class Embedding extends UnaryBlock {

    private final int width;
    private final Parameter weight;

    /**
     * @param count the number of ids
     * @param width the vector width
     * @param initStd standard deviation of the normal initializer
     */
    public Embedding(int count, int width, float initStd) {
        this.width = width;
        weight =
                declare(
                        "weight",
                        Parameter.Type.WEIGHT,
                        new Shape(count, width),
                        new NormalInitializer(initStd));
    }

    /**
     * Looks ids up.
     *
     * @param store the parameter store, or {@code null}
     * @param ids integer ids of any shape; results are attached to its manager
     * @param training whether this is a training pass
     * @return the vectors, shape ids.shape + (width)
     */
    @Override
    public NDArray forward(ParameterStore store, NDArray ids, boolean training) {
        NDArray w = value(store, weight, ids.getDevice(), training);
        return ex(ids).embedding(ids, w, SparseFormat.DENSE).singletonOrThrow();
    }

    /** @return the (count, width) weight parameter */
    public Parameter weight() {
        return weight;
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[0].add(width)};
    }
}
