package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.NormalInitializer;

/**
 * GPT-2's affine projection: {@code y = x @ weight + bias} with {@code weight} of shape (in, out),
 * exactly as Hugging Face's {@code Conv1D} stores it, so checkpoint tensors load without a
 * transpose. In inference on the CPU a decode step's projection is split across the cores, a
 * batch's by a kernel of our own ({@link SplitProjection}).
 */
public final class Conv1D extends UnaryBlock {

    private final int nf;
    private final Parameter weight;
    private final Parameter bias;
    private final SplitProjection split = new SplitProjection();

    /**
     * @param nx input width
     * @param nf output width
     * @param initStd standard deviation of the normal initializer for the weight
     */
    public Conv1D(int nx, int nf, float initStd) {
        this.nf = nf;
        weight =
                declare(
                        "weight",
                        Parameter.Type.WEIGHT,
                        new Shape(nx, nf),
                        new NormalInitializer(initStd));
        bias = declare("bias", Parameter.Type.BIAS, new Shape(nf), Parameter.Type.BIAS.getInitializer());
    }

    @Override
    public NDArray forward(ParameterStore store, NDArray x, boolean training) {
        NDArray w = value(store, weight, x.getDevice(), training);
        NDArray b = value(store, bias, x.getDevice(), training);
        return split.matMulAdd(x, w, b, training);
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape in = inputShapes[0];
        return new Shape[] {in.slice(0, in.dimension() - 1).add(nf)};
    }
}
