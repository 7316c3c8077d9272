package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.NormalInitializer;

/**
 * GPT-2's affine projection: {@code y = x @ weight + bias} with {@code weight} of shape (in, out),
 * exactly as Hugging Face's {@code Conv1D} stores it, so checkpoint tensors load without a
 * transpose; computed by {@link Kernels#project}.
 * A {@link LoraAdapter} attached to it adds its update to the output.
 */
public final class Conv1D extends UnaryBlock {

    private final int nf;
    private final ProjectionWeight projection;
    private final LoraSlot lora = new LoraSlot();

    /**
     * @param nx input width
     * @param nf output width
     * @param initStd standard deviation of the normal initializer for the weight
     */
    public Conv1D(int nx, int nf, float initStd) {
        this.nf = nf;
        Parameter weight =
                declare(
                        "weight",
                        Parameter.Type.WEIGHT,
                        new Shape(nx, nf),
                        new NormalInitializer(initStd));
        Parameter bias =
                declare("bias", Parameter.Type.BIAS, new Shape(nf), Parameter.Type.BIAS.getInitializer());
        projection = new ProjectionWeight(ProjectionWeight.Layout.IN_OUT, weight, bias);
    }

    @Override
    public NDArray forward(ParameterStore store, NDArray x, boolean training) {
        return lora.apply(kernels(), store, x, kernels().project(x, projection, store, training), training); // (..., nf)
    }

    /** @return the weight and bias as the kernels take them */
    ProjectionWeight projection() {
        return projection;
    }

    /** @return the LoRA pairs attached to this projection */
    LoraSlot loraSlot() {
        return lora;
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape in = inputShapes[0];
        return new Shape[] {in.slice(0, in.dimension() - 1).add(nf)};
    }
}
