package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.initializer.UniformInitializer;

/**
 * One projection's LoRA pair, as PEFT's {@code lora.Linear} holds it: {@code lora_A} of shape (r,
 * in), {@code lora_B} of shape (out, r), and the update {@code scaling * B A dropout(x)} added to
 * the frozen projection's output. The shapes are the same for GPT-2's (in, out) {@code Conv1D}
 * weights ({@code fan_in_fan_out}): only the frozen weight is transposed there, never A or B.
 */
public final class LoraWeights {

    /** The stored name of the A matrix under its projection. */
    public static final String A = "lora_A.weight";
    /** The stored name of the B matrix under its projection. */
    public static final String B = "lora_B.weight";

    private final Parameter a;
    private final Parameter b;
    private final Shape aShape;
    private final Shape bShape;
    private final float scaling;
    private final float dropout;

    /**
     * Declares the pair; its arrays come from {@link #initialize} or {@link Parameter#setArray}.
     *
     * @param in the projection's input width
     * @param out its output width
     * @param config the adapter's rank, scale and dropout
     * @param trainable whether A and B record gradients
     */
    public LoraWeights(long in, long out, LoraConfig config, boolean trainable) {
        aShape = new Shape(config.rank(), in);
        bShape = new Shape(out, config.rank());
        // PEFT: kaiming_uniform_(A, a=sqrt(5)), whose bound is sqrt(6 / ((1 + 5) in)) = 1/sqrt(in)
        a = Parameter.builder()
                .setName(A)
                .setType(Parameter.Type.WEIGHT)
                .optRequiresGrad(trainable)
                .optInitializer(new UniformInitializer((float) (1 / Math.sqrt(in))))
                .build();
        b = Parameter.builder()
                .setName(B)
                .setType(Parameter.Type.WEIGHT)
                .optRequiresGrad(trainable)
                .optInitializer(Initializer.ZEROS)
                .build();
        scaling = config.scaling();
        dropout = config.dropout();
    }

    /**
     * Gives A its Kaiming-uniform values and B zeros, so the fresh pair adds exactly nothing.
     *
     * @param manager the manager that owns the arrays (the model's)
     * @param dataType their element type
     */
    public void initialize(NDManager manager, DataType dataType) {
        a.setShape(aShape);
        b.setShape(bShape);
        a.initialize(manager, dataType);
        b.initialize(manager, dataType);
    }

    /** @return A, (r, in) */
    public Parameter a() {
        return a;
    }

    /** @return B, (out, r) */
    public Parameter b() {
        return b;
    }

    /** @return A's shape, (r, in) */
    public Shape aShape() {
        return aShape;
    }

    /** @return B's shape, (out, r) */
    public Shape bShape() {
        return bShape;
    }

    /** @return {@code alpha / r} */
    public float scaling() {
        return scaling;
    }

    /**
     * The update of a forward pass.
     *
     * @param store the parameter store, or {@code null} to use the parameters' own arrays
     * @param x the projection's input (..., in); the result is attached to its manager
     * @param training whether this is a training pass (enables dropout)
     * @return {@code scaling * dropout(x) A^T B^T}, (..., out)
     */
    public NDArray delta(ParameterStore store, NDArray x, boolean training) {
        NDArray aValue = ConfiguredBlock.value(store, a, x.getDevice(), training); // (r, in)
        NDArray bValue = ConfiguredBlock.value(store, b, x.getDevice(), training); // (out, r)
        NDArray down = Dropouts.apply(x, dropout, training).matMul(aValue.transpose()); // (..., r)
        // autograd keeps the scaling for the backward pass: a kept scalar, never a Java number (Scalars)
        return down.matMul(bValue.transpose()).mul(Scalars.of(scaling, down)); // (..., out)
    }

    /**
     * {@code scaling * B A}, the change this pair makes to the projection's weight.
     *
     * @param layout how the projection stores its weight
     * @return the update, (out, in) for {@link ProjectionWeight.Layout#OUT_IN}, (in, out) for
     *     {@link ProjectionWeight.Layout#IN_OUT}, attached to A's manager
     */
    public NDArray weightDelta(ProjectionWeight.Layout layout) {
        NDArray delta = b.getArray().matMul(a.getArray()).mul(scaling); // (out, in)
        return layout == ProjectionWeight.Layout.OUT_IN ? delta : delta.transpose();
    }
}
