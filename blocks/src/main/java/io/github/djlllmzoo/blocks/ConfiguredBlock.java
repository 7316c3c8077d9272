package io.github.djlllmzoo.blocks;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.internal.NDArrayEx;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.util.Pair;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A DJL block whose parameter shapes come from the model config, not from input shapes, and whose
 * parameter and child names are the Hugging Face checkpoint names. {@link #namedParameters()}
 * gives every parameter under its dotted checkpoint name (e.g. {@code h.0.attn.c_attn.weight}).
 *
 * <p>A block computes its projections and attention with {@link #kernels()}: its model's choice
 * once the model has run, else the engine's own operations.
 */
public abstract class ConfiguredBlock extends AbstractBlock {

    private final Map<Parameter, Shape> declaredShapes = new LinkedHashMap<>();
    private volatile Kernels kernels = EngineKernels.INSTANCE;

    /** @return the kernels this block computes with */
    public Kernels kernels() {
        return kernels;
    }

    /**
     * Makes this block and every block under it compute with {@code kernels}.
     *
     * @param kernels the kernels
     */
    public void useKernels(Kernels kernels) {
        this.kernels = kernels;
        for (Block child : getChildren().values()) {
            if (child instanceof ConfiguredBlock) {
                ((ConfiguredBlock) child).useKernels(kernels);
            }
        }
    }

    /**
     * Declares a parameter of a fixed shape.
     *
     * @param name the Hugging Face name, e.g. "weight" or "bias"
     * @param type the DJL parameter type
     * @param shape its shape
     * @param initializer how to initialize it when training from scratch
     * @return the parameter
     */
    protected final Parameter declare(
            String name, Parameter.Type type, Shape shape, Initializer initializer) {
        Parameter parameter =
                addParameter(
                        Parameter.builder()
                                .setName(name)
                                .setType(type)
                                .optInitializer(initializer)
                                .build());
        declaredShapes.put(parameter, shape);
        return parameter;
    }

    /**
     * Every parameter of this block and its descendants under its dotted checkpoint name.
     *
     * @return name to parameter, in declaration order
     */
    public Map<String, Parameter> namedParameters() {
        Map<String, Parameter> out = new LinkedHashMap<>();
        collect("", this, out);
        return Collections.unmodifiableMap(out);
    }

    /**
     * The shape each parameter has, by its dotted checkpoint name.
     *
     * @return name to shape, in declaration order
     */
    public Map<String, Shape> declaredShapes() {
        Map<String, Shape> out = new LinkedHashMap<>();
        for (Map.Entry<String, Parameter> e : namedParameters().entrySet()) {
            out.put(e.getKey(), shapeOf(e.getValue()));
        }
        return Collections.unmodifiableMap(out);
    }

    private Shape shapeOf(Parameter parameter) {
        Shape shape = declaredShapes.get(parameter);
        if (shape != null) {
            return shape;
        }
        for (Block child : getChildren().values()) {
            if (child instanceof ConfiguredBlock) {
                Shape s = ((ConfiguredBlock) child).shapeOf(parameter);
                if (s != null) {
                    return s;
                }
            }
        }
        return null;
    }

    private static void collect(String prefix, Block block, Map<String, Parameter> out) {
        for (Parameter p : block.getDirectParameters().values()) {
            out.put(prefix + p.getName(), p);
        }
        int i = 0;
        for (Pair<String, Block> child : block.getChildren()) {
            i++;
            collect(prefix + childName(child.getKey(), i) + '.', child.getValue(), out);
        }
    }

    /**
     * DJL stores a child under "NN" + name, NN being its 1-based position; undo that.
     *
     * @param stored the stored name
     * @param position the 1-based position of the child
     * @return the name the child was added with
     */
    static String childName(String stored, int position) {
        String prefix = String.format("%02d", position);
        return stored.startsWith(prefix) ? stored.substring(prefix.length()) : stored;
    }

    @Override
    protected void prepare(Shape[] inputShapes) {
        for (Map.Entry<Parameter, Shape> e : declaredShapes.entrySet()) {
            if (!e.getKey().isInitialized()) {
                e.getKey().setShape(e.getValue());
            }
        }
    }

    @Override
    protected void initializeChildBlocks(
            NDManager manager, DataType dataType, Shape... inputShapes) {
        for (Block child : getChildren().values()) {
            child.initialize(manager, dataType, inputShapes);
        }
    }

    /**
     * The array of a parameter for a forward pass: through the parameter store when one is given
     * (DJL's training and Predictor paths), else the parameter's own array.
     *
     * @param store the parameter store, or {@code null}
     * @param parameter the parameter
     * @param device the device the computation runs on
     * @param training whether this is a training pass
     * @return the array
     */
    protected static NDArray value(
            ParameterStore store, Parameter parameter, Device device, boolean training) {
        if (parameter == null) {
            return null;
        }
        if (store == null) {
            return parameter.getArray();
        }
        return store.getValue(parameter, device, training);
    }

    /**
     * The engine-internal operators of an array; results are attached to {@code array}'s manager.
     *
     * @param array the array whose manager owns the results
     * @return its operator set
     */
    protected static NDArrayEx ex(NDArray array) {
        return array.getNDArrayInternal();
    }
}
