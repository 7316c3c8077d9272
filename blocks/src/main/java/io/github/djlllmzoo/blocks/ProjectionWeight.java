package io.github.djlllmzoo.blocks;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.function.Supplier;

/**
 * The weight (and optional bias) of one affine projection as a block holds it, which {@link
 * Kernels#project} takes: {@link Linear}'s (out, in), {@link Conv1D}'s (in, out), the tied LM head
 * over the token embedding's (vocab, hidden).
 *
 * <p>Kernels receive this holder rather than the weight's array so that a weight may be held in
 * another form: after {@link #compress} the weight is a {@link CompressedWeight} (int8 or 16-bit
 * codes in direct buffers) instead of the float parameter, whose array is freed; an
 * implementation with products for that form reads {@link #compressed()}, and {@link
 * #weight(ParameterStore, NDArray, boolean)} gives the engine's reference the weight widened to
 * float32, (out, in), for inference only. {@link #prepared} keeps what an implementation makes once per weight (the CPU
 * kernels' per-core slices; a repacked int8 layout).
 */
public final class ProjectionWeight {

    /** How a weight is stored. */
    public enum Layout {
        /** (out, in), as {@code torch.nn.Linear}: {@code x @ weight^T + bias}. */
        OUT_IN,
        /** (in, out), as Hugging Face's {@code Conv1D}: {@code x @ weight + bias}. */
        IN_OUT;

        /**
         * @param weight the weight's shape
         * @return its input width
         */
        public long in(Shape weight) {
            return weight.get(this == OUT_IN ? 1 : 0);
        }

        /**
         * @param weight the weight's shape
         * @return its output width
         */
        public long out(Shape weight) {
            return weight.get(this == OUT_IN ? 0 : 1);
        }
    }

    private record Prepared(Object owner, Object state) {}

    private final Layout layout;
    private final Parameter weight;
    private final Parameter bias;
    private volatile Prepared prepared;
    private volatile CompressedWeight compressed;

    /**
     * @param layout how {@code weight} is stored
     * @param weight the weight parameter
     * @param bias the bias parameter (out), or {@code null}
     */
    public ProjectionWeight(Layout layout, Parameter weight, Parameter bias) {
        this.layout = layout;
        this.weight = weight;
        this.bias = bias;
    }

    /** @return how the weight is stored */
    public Layout layout() {
        return layout;
    }

    /** @return the weight parameter */
    public Parameter weightParameter() {
        return weight;
    }

    /**
     * The weight's array for a forward pass (see {@link ConfiguredBlock#value}).
     *
     * @param store the parameter store, or {@code null}
     * @param device the device the computation runs on
     * @param training whether this is a training pass
     * @return the weight, shaped as {@link #layout()} says
     */
    public NDArray weight(ParameterStore store, Device device, boolean training) {
        return ConfiguredBlock.value(store, weight, device, training);
    }

    /**
     * The weight for a forward pass whose input is {@code x}: the parameter's array, or a
     * compressed weight widened to float32 in {@code x}'s manager.
     *
     * @param store the parameter store, or {@code null}
     * @param x the input; a widened weight is attached to its manager
     * @param training whether this is a training pass
     * @return the weight: shaped as {@link #layout()} says, or (out, in) where {@link #compressed()}
     * @throws UnsupportedOperationException for a training pass over a compressed weight
     */
    public NDArray weight(ParameterStore store, NDArray x, boolean training) {
        CompressedWeight c = compressed;
        if (c == null) {
            return weight(store, x.getDevice(), training);
        }
        refuseTraining(c, training);
        return c.toFloat32(x.getManager()).toDevice(x.getDevice(), false);
    }

    /**
     * The rows {@code ids} pick of a compressed (count, width) table, each widened to float32: an
     * embedding lookup that widens only the rows it gathers.
     *
     * @param ids integer ids of any shape; the result is attached to its manager
     * @param training whether this is a training pass
     * @return the rows, shape ids.shape + (width)
     * @throws IllegalStateException if the weight is not compressed
     * @throws IllegalArgumentException naming an id outside [0, count)
     * @throws UnsupportedOperationException for a training pass
     */
    public NDArray rows(NDArray ids, boolean training) {
        CompressedWeight c = compressed;
        if (c == null) {
            throw new IllegalStateException("weight " + weight.getName() + " is not compressed");
        }
        refuseTraining(c, training);
        long[] picked = ids.toType(DataType.INT64, false).toLongArray();
        int width = c.inFeatures();
        float[] values = new float[Math.multiplyExact(picked.length, width)];
        for (int i = 0; i < picked.length; i++) {
            long id = picked[i];
            if (id < 0 || id >= c.outFeatures()) {
                throw new IllegalArgumentException(
                        "id " + id + " is outside the table " + weight.getName() + " of " + c.outFeatures() + " rows");
            }
            c.widenRow((int) id, values, i * width);
        }
        return ids.getManager().create(values, ids.getShape().add(width)).toDevice(ids.getDevice(), false);
    }

    private static void refuseTraining(CompressedWeight c, boolean training) {
        if (training) {
            throw new UnsupportedOperationException(
                    "this model's weights are held as " + c.format().dtypeName()
                            + ": training needs float32 weights; load the model with dtype float32 to fine-tune it");
        }
    }

    /** @return the compressed weight, or {@code null} while the float parameter holds it */
    public CompressedWeight compressed() {
        return compressed;
    }

    /**
     * Holds the weight as {@code format} from now on and frees the float parameter's array (a
     * float32 {@code format} leaves it as it is). Once compressed a weight stays so. The array is
     * read in place where the engine allows, row by row: no float copy of the whole weight is made.
     *
     * @param format the form to hold it in
     * @throws IllegalStateException if the parameter has no array or the weight is already compressed
     */
    public synchronized void compress(WeightFormat format) {
        if (format == WeightFormat.FLOAT32) {
            return;
        }
        checkNotCompressed();
        NDArray array = weight.getArray();
        if (array == null) {
            throw new IllegalStateException("weight " + weight.getName() + " has no values to compress");
        }
        Shape shape = array.getShape();
        int out = Math.toIntExact(layout.out(shape));
        int in = Math.toIntExact(layout.in(shape));
        NDArray floats = array.toType(DataType.FLOAT32, false);
        try {
            FloatBuffer values = floats.toByteBuffer(true).order(ByteOrder.nativeOrder()).asFloatBuffer();
            hold(CompressedWeight.compress(rows(layout, values, out, in), out, in, format));
        } finally {
            if (floats != array) {
                floats.close();
            }
        }
    }

    /**
     * Holds the weight as {@code compressed} from now on (a loader that compressed it straight from
     * a checkpoint), freeing the float parameter's array if it has one.
     *
     * @param compressed the weight, (out, in)
     * @throws IllegalStateException if the weight is already compressed
     */
    public synchronized void hold(CompressedWeight compressed) {
        checkNotCompressed();
        this.compressed = compressed;
        prepared = null;
        weight.close();
    }

    private void checkNotCompressed() {
        if (compressed != null) {
            throw new IllegalStateException("weight " + weight.getName() + " is already " + compressed.format().dtypeName());
        }
    }

    /**
     * The rows (out, in) of a weight whose values are stored as {@code layout} says.
     *
     * @param layout how {@code stored} holds the weight
     * @param stored the values, row major in {@code layout}'s shape; read with absolute indices
     * @param out output width
     * @param in input width
     * @return a reader of its (out, in) rows
     */
    public static CompressedWeight.Rows rows(Layout layout, FloatBuffer stored, int out, int in) {
        if (layout == Layout.OUT_IN) {
            return (row, values) -> stored.get(row * in, values, 0, in);
        }
        return (row, values) -> {
            for (int i = 0; i < in; i++) {
                values[i] = stored.get(i * out + row); // (in, out): row is a column
            }
        };
    }

    /**
     * The bias's array for a forward pass.
     *
     * @param store the parameter store, or {@code null}
     * @param device the device the computation runs on
     * @param training whether this is a training pass
     * @return the bias (out), or {@code null} where the projection has none
     */
    public NDArray bias(ParameterStore store, Device device, boolean training) {
        return ConfiguredBlock.value(store, bias, device, training);
    }

    /**
     * What {@code owner} keeps for this weight, made by {@code make} the first time it asks; made
     * again when another owner asked last.
     *
     * @param owner the implementation that keeps it
     * @param type its type
     * @param make makes it
     * @param <T> its type
     * @return the state
     */
    public <T> T prepared(Object owner, Class<T> type, Supplier<T> make) {
        Prepared p = prepared;
        if (p != null && p.owner() == owner) {
            return type.cast(p.state());
        }
        synchronized (this) {
            p = prepared;
            if (p == null || p.owner() != owner) {
                p = new Prepared(owner, make.get());
                prepared = p;
            }
            return type.cast(p.state());
        }
    }
}
