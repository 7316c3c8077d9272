package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.ndarray.types.SparseFormat;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.NormalInitializer;

/**
 * A lookup table from ids to vectors ({@code weight} of shape (count, width)). Used for token
 * embeddings and GPT-2's learned position embeddings; a tied LM head reads the same weight, through
 * the same {@link ProjectionWeight}, so that a table held compressed is compressed once for both: its
 * lookup then widens only the rows it gathers.
 */
public final class Embedding extends UnaryBlock {

    private final int width;
    private final Parameter weight;
    private final ProjectionWeight table;

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
        table = new ProjectionWeight(ProjectionWeight.Layout.OUT_IN, weight, null);
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
        if (table.compressed() != null) {
            return table.rows(ids, training);
        }
        NDArray w = value(store, weight, ids.getDevice(), training);
        return ex(ids).embedding(ids, w, SparseFormat.DENSE).singletonOrThrow();
    }

    /** @return the table as a (count, width) = (out, in) projection weight: a tied LM head's */
    ProjectionWeight projection() {
        return table;
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
