package io.github.djlllmzoo.blocks;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import java.lang.ref.WeakReference;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The forms of a model's weights that let {@link EngineKernels} make fewer engine calls at
 * inference, each made once, the first time it is needed, and kept with the weight: a transposed
 * view of an (out, in) weight (a product is then one {@code matmul}, not {@code t} and {@code
 * matmul}); one (Σout, in) weight for projections of the same input (attention's q, k and v, a
 * gated MLP's gate and up: one product instead of one each, at the cost of a copy of those
 * weights); an RMSNorm's scale as the affine weight of a layer norm ({@link #normAffine}); a decode
 * step's rotary embedding as one (D, D) matrix per head ({@link #rotationPerHead}); and the mask of
 * a cache's unfilled slots ({@link #unfilledMask}).
 *
 * <p>On a GPU each engine call is a kernel launch whose fixed cost is a decode step's time at its
 * few rows. Training never uses these forms: a training pass, and anything else that changes
 * weights in place ({@link LoraAdapter#merge}), calls {@link #weightsChanged}, after which they are
 * made again from the parameters.
 */
final class EngineForms {

    /** Counts the times weights may have changed in place; a form made before the last is stale. */
    private static final AtomicLong GENERATION = new AtomicLong();

    /** The masks of unfilled cache slots of the passes under way, by pass manager, capacity, fill and type. */
    private static final Map<MaskKey, PassMask> MASKS =
            new java.util.LinkedHashMap<>(16, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<MaskKey, PassMask> eldest) {
                    return size() > 16;
                }
            };

    /** A pass's mask and the manager it was made for (identity hashes can repeat once a manager is gone). */
    private record PassMask(NDManager manager, NDArray mask) {}

    private record MaskKey(int manager, long capacity, int length, DataType dataType, Device device) {}

    /** IEEE half precision's -inf. */
    private static final short FLOAT16_NEGATIVE_INFINITY = (short) 0xFC00;

    /** Batched views of cache buffers ({@link #batchedView}), by buffer identity and kind. */
    private static final Map<ViewKey, BufferView> BATCHED_VIEWS = new HashMap<>();

    private record BufferView(WeakReference<NDArray> buffer, NDArray view) {}

    private record ViewKey(int buffer, boolean transposed) {}

    /** The identity and the half-rotation permutation of a head width, by device and type, made once. */
    private static final Map<RotationBasisKey, NDArray[]> ROTATION_BASES = new HashMap<>();

    private record RotationBasisKey(String engine, Device device, DataType dataType, int headDim) {}

    /** The rotations of the passes under way, by their factors' identity and head counts. */
    private static final Map<RotationKey, Rotation> ROTATIONS =
            new java.util.LinkedHashMap<>(16, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<RotationKey, Rotation> eldest) {
                    return size() > 16;
                }
            };

    private record Rotation(WeakReference<NDArray> cos, NDArray perHead) {}

    /** A rotation's factors (by identity), rows and head counts: a record, as it is looked up at every layer. */
    private record RotationKey(int cos, long rows, long rotated, long heads) {}

    /** Cache buffers autograd records (written in grad mode), by identity, held weakly. */
    private static final Map<Integer, WeakReference<NDArray>> RECORDED_BUFFERS = new HashMap<>();

    /** RMSNorm scales seen, by identity of the scale's array. */
    private static final Map<Integer, NormForm> NORMS = new HashMap<>();

    private EngineForms() {}

    /** Says that weights may have changed in place: every form is made again before its next use. */
    static void weightsChanged() {
        GENERATION.incrementAndGet();
    }

    /**
     * Projections of one input multiplied as one: the (Σout, in) concatenation of their weights,
     * used through its transposed view, and of their biases.
     *
     * @param generation the {@link #GENERATION} it was made at
     * @param sources the parameter arrays it was made from
     * @param weight (Σout, in), owned here
     * @param transposed (in, Σout), a view of {@code weight}
     * @param bias (Σout), or {@code null}
     * @param outs each projection's output width
     */
    record Fused(long generation, NDArray[] sources, NDArray weight, NDArray transposed, NDArray bias, long[] outs) {

        boolean madeFrom(NDArray[] arrays) {
            if (generation != GENERATION.get() || weight.isReleased()) {
                return false;
            }
            for (int i = 0; i < arrays.length; i++) {
                if (arrays[i] != sources[i]) {
                    return false;
                }
            }
            return true;
        }

        void close() {
            transposed.close();
            weight.close();
            if (bias != null) {
                bias.close();
            }
        }
    }

    /** What {@link EngineKernels} keeps with a weight. */
    private static final class Slot {
        NDArray source;
        NDArray transposed;
        Fused fused;
    }

    /**
     * An RMSNorm's scale as a layer norm's: {@code x * rsqrt(mean(x²) + eps) * w} is the first half
     * of {@code layer_norm([x, -x])} with weight {@code [w, 0]} (the pair's mean is 0 and its
     * variance {@code mean(x²)}), one engine call where the norm itself takes six.
     *
     * @param source the scale's array, held weakly
     * @param generation the {@link #GENERATION} it was made at
     * @param unitOffset whether the weight is {@code 1 + w}
     * @param signs (2, 1): 1 and -1, which make (B, 2, E) of a row (B, 1, E)
     * @param gamma (2, E): {@code w} (or {@code 1 + w}), then zeros
     * @param beta (2, E) zeros
     */
    private record NormForm(
            WeakReference<NDArray> source, long generation, boolean unitOffset, NDArray signs, NDArray gamma,
            NDArray beta) {

        boolean of(NDArray array, boolean offset) {
            return source.get() == array && generation == GENERATION.get() && unitOffset == offset
                    && !gamma.isReleased();
        }
    }

    private static Slot slot(ProjectionWeight weight) {
        return weight.prepared(EngineForms.class, Slot.class, Slot::new);
    }

    /**
     * @param weight an (out, in) projection weight held as a float parameter
     * @param array its array for this pass
     * @return (in, out), a view of {@code array}
     */
    static NDArray transposed(ProjectionWeight weight, NDArray array) {
        Slot slot = slot(weight);
        synchronized (slot) {
            if (slot.source != array || slot.transposed == null || slot.transposed.isReleased()) {
                if (slot.transposed != null && !slot.transposed.isReleased()) {
                    slot.transposed.close(); // a view of an array the weight no longer holds
                }
                slot.source = array;
                slot.transposed = array.transpose(); // a view: stays current with the weight
            }
            return slot.transposed;
        }
    }

    /**
     * The fused form of {@code weights}, or {@code null} where they cannot be one product: a
     * compressed weight, another layout than (out, in), different input widths, or biases on some
     * only.
     *
     * @param weights projections of the same input
     * @param store the parameter store, or {@code null}
     * @param device the device of the input
     * @return the fused form, kept with the first weight
     */
    static Fused fused(ProjectionWeight[] weights, ParameterStore store, Device device) {
        NDArray[] arrays = new NDArray[weights.length];
        boolean biases = weights[0].bias(store, device, false) != null;
        for (int i = 0; i < weights.length; i++) {
            ProjectionWeight w = weights[i];
            if (w.compressed() != null || w.layout() != ProjectionWeight.Layout.OUT_IN
                    || (w.bias(store, device, false) != null) != biases) {
                return null;
            }
            arrays[i] = w.weight(store, device, false);
            if (arrays[i].getShape().get(1) != arrays[0].getShape().get(1)) {
                return null;
            }
        }
        Slot slot = slot(weights[0]);
        synchronized (slot) {
            Fused fused = slot.fused;
            if (fused != null && fused.sources().length == arrays.length && fused.madeFrom(arrays)) {
                return fused;
            }
            if (fused != null) {
                fused.close();
            }
            long generation = GENERATION.get();
            long[] outs = new long[arrays.length];
            NDList biasList = new NDList();
            for (int i = 0; i < arrays.length; i++) {
                outs[i] = arrays[i].getShape().get(0);
                if (biases) {
                    biasList.add(weights[i].bias(store, device, false));
                }
            }
            NDArray weight = NDArrays.concat(new NDList(arrays), 0); // (Σout, in), on the parameters' manager
            NDArray bias = biases ? NDArrays.concat(biasList, 0) : null; // (Σout)
            slot.fused = new Fused(generation, arrays, weight, weight.transpose(), bias, outs);
            return slot.fused;
        }
    }

    /**
     * The layer-norm form of an RMSNorm's scale ({@link NormForm}).
     *
     * @param weight the scale (E), float32 or of the input's type
     * @param unitOffset whether the scale is {@code 1 + weight} (Gemma)
     * @param like the input, whose type and device the form takes
     * @return signs (2, 1), gamma (2, E) and beta (2, E)
     */
    static NDArray[] normAffine(NDArray weight, boolean unitOffset, NDArray like) {
        synchronized (NORMS) {
            Integer key = System.identityHashCode(weight);
            NormForm form = NORMS.get(key);
            if (form == null || !form.of(weight, unitOffset)) {
                for (Iterator<NormForm> it = NORMS.values().iterator(); it.hasNext(); ) {
                    NormForm f = it.next();
                    NDArray source = f.source().get();
                    if (source == null || source.isReleased() || f.gamma().isReleased()) {
                        it.remove();
                    }
                }
                form = normForm(weight, unitOffset, like);
                NORMS.put(key, form);
            }
            return new NDArray[] {form.signs(), form.gamma(), form.beta()};
        }
    }

    private static NormForm normForm(NDArray weight, boolean unitOffset, NDArray like) {
        DataType type = like.getDataType();
        NDManager owner = weight.getManager(); // the model's: the form lives as long as the weight
        long e = weight.getShape().get(0);
        NDArray scale;
        try (NDManager scratch = owner.newSubManager()) {
            NDArray w = weight.toType(DataType.FLOAT32, true);
            w.attach(scratch);
            NDArray first = unitOffset ? w.add(1f) : w;
            NDArray gamma32 = NDArrays.stack(new NDList(first, scratch.zeros(new Shape(e))), 0); // (2, E)
            scale = gamma32.toType(type, true).toDevice(like.getDevice(), true);
            scale.attach(owner);
        }
        NDArray signs = owner.create(new float[] {1, -1}, new Shape(2, 1)).toType(type, false).toDevice(like.getDevice(), false);
        NDArray beta = owner.zeros(new Shape(2, e), type, like.getDevice());
        return new NormForm(new WeakReference<>(weight), GENERATION.get(), unitOffset, signs, scale, beta);
    }

    /**
     * @param buffer a cache buffer
     * @return whether {@link #bufferRecorded} was said of it
     */
    static boolean recordedBuffer(NDArray buffer) {
        synchronized (RECORDED_BUFFERS) {
            WeakReference<NDArray> seen = RECORDED_BUFFERS.get(System.identityHashCode(buffer));
            return seen != null && seen.get() == buffer;
        }
    }

    /**
     * Says that autograd records a cache buffer, so that views a split makes of it cannot be written.
     *
     * @param buffer the buffer
     */
    static void bufferRecorded(NDArray buffer) {
        synchronized (RECORDED_BUFFERS) {
            RECORDED_BUFFERS.values().removeIf(r -> r.get() == null || r.get().isReleased());
            RECORDED_BUFFERS.put(System.identityHashCode(buffer), new WeakReference<>(buffer));
        }
    }

    /**
     * The additive mask of a cache's slots past the filled ones: 0 for the first {@code length} of
     * {@code capacity} slots, -inf for the others. Made once per pass (in the pass's manager, with
     * {@code like}'s type and device) and shared by its layers.
     *
     * @param like the pass's queries
     * @param capacity the buffers' slots
     * @param length the filled slots
     * @return (1, capacity), which broadcasts over scores of any rank
     */
    static NDArray unfilledMask(NDArray like, long capacity, int length) {
        NDManager manager = like.getManager();
        DataType type = like.getDataType();
        MaskKey key = new MaskKey(System.identityHashCode(manager), capacity, length, type, like.getDevice());
        synchronized (MASKS) {
            PassMask kept = MASKS.get(key);
            if (kept != null && kept.manager() == manager && !kept.mask().isReleased()) {
                return kept.mask();
            }
            int slots = Math.toIntExact(capacity);
            Shape shape = new Shape(1, capacity);
            NDArray mask;
            if (type == DataType.FLOAT16) { // made in its type: one copy to the device, no conversion after
                java.nio.ShortBuffer bits = java.nio.ShortBuffer.allocate(slots);
                for (int i = length; i < slots; i++) {
                    bits.put(i, FLOAT16_NEGATIVE_INFINITY);
                }
                mask = manager.create(bits, shape, DataType.FLOAT16).toDevice(like.getDevice(), false);
            } else {
                float[] values = new float[slots];
                java.util.Arrays.fill(values, length, slots, Float.NEGATIVE_INFINITY);
                mask = manager.create(values, shape).toType(type, false).toDevice(like.getDevice(), false);
            }
            MASKS.put(key, new PassMask(manager, mask));
            return mask;
        }
    }

    /**
     * A cache buffer (B, H_kv, C, D) as the operand of a decode step's batched product, (B·H_kv, D, C)
     * transposed for keys or (B·H_kv, C, D) for values: a view, made once per buffer and kept in the
     * buffer's manager (a step's writes go into the buffer in place, so the view stays current).
     * Views of buffers that have been closed are closed when another is made.
     *
     * @param buffer the buffer
     * @param transposed whether to swap its last two axes (keys)
     * @return the view
     */
    static NDArray batchedView(NDArray buffer, boolean transposed) {
        ViewKey key = new ViewKey(System.identityHashCode(buffer), transposed);
        synchronized (BATCHED_VIEWS) {
            BufferView kept = BATCHED_VIEWS.get(key);
            if (kept != null && kept.buffer().get() == buffer && !kept.view().isReleased()) {
                return kept.view();
            }
            Iterator<BufferView> views = BATCHED_VIEWS.values().iterator();
            while (views.hasNext()) {
                BufferView view = views.next();
                NDArray owner = view.buffer().get();
                if (owner == null || owner.isReleased() || view.view().isReleased()) {
                    view.view().close(); // a view keeps its buffer's memory alive
                    views.remove();
                }
            }
            Shape shape = buffer.getShape(); // (B, H_kv, C, D)
            NDArray flat = buffer.reshape(shape.get(0) * shape.get(1), shape.get(2), shape.get(3)); // (B·H_kv, C, D)
            NDArray view = transposed ? flat.transpose(0, 2, 1) : flat;
            if (view != flat) {
                flat.close();
            }
            view.attach(buffer.getManager());
            BATCHED_VIEWS.put(key, new BufferView(new WeakReference<>(buffer), view));
            return view;
        }
    }

    /**
     * A decode step's rotary embedding as a matrix per head: {@code rotate(x) = x @ R}, R (D, D) with
     * {@code R[i][j] = cos[j]} where {@code i = j}, {@code sin[j]} (signed as {@link
     * RotaryEmbedding}'s table) where {@code i = (j + D/2) mod D}, else 0; the identity for the heads
     * past {@code rotated} (values, and the zero row's heads). Made once per pass (its layers share
     * the factors), in the factors' manager, and kept beside them; the identity and the permutation
     * it is made of are made once per device, type and width.
     *
     * @param cosSin the factors of one position per sequence, (B or 1, 1, 1, D) each (1 where the
     *     rows share their positions)
     * @param rows the rows B of the heads to rotate
     * @param rotated the heads to rotate (queries and keys)
     * @param heads all heads
     * @return (B·heads, D, D), the batched operand of the heads as (B·heads, 1, D)
     */
    static NDArray rotationPerHead(NDList cosSin, long rows, long rotated, long heads) {
        NDArray cos = cosSin.get(0); // (B or 1, 1, 1, D)
        RotationKey key = new RotationKey(System.identityHashCode(cos), rows, rotated, heads);
        synchronized (ROTATIONS) {
            Rotation kept = ROTATIONS.get(key);
            if (kept != null && kept.cos().get() == cos && !kept.perHead().isReleased()) {
                return kept.perHead();
            }
            NDArray sin = cosSin.get(1);
            int d = Math.toIntExact(cos.getShape().get(3));
            NDArray[] basis = rotationBasis(cos.getManager().getEngine().getEngineName(), cos.getDevice(), cos.getDataType(), d);
            NDArray eye = basis[0];
            NDArray r = eye.mul(cos).addi(basis[1].mul(sin)); // (B or 1, 1, D, D): a row of factors scales each column
            NDArray perHead =
                    NDArrays.concat(
                                    new NDList(r.broadcast(new Shape(rows, rotated, d, d)), eye.broadcast(new Shape(rows, heads - rotated, d, d))),
                                    1) // (B, heads, D, D)
                            .reshape(rows * heads, d, d);
            ROTATIONS.put(key, new Rotation(new WeakReference<>(cos), perHead));
            return perHead;
        }
    }

    /** The identity and the permutation {@code P[(j + D/2) mod D][j] = 1}, (D, D) each, kept for the process. */
    private static NDArray[] rotationBasis(String engine, Device device, DataType dataType, int d) {
        synchronized (ROTATION_BASES) {
            return ROTATION_BASES.computeIfAbsent(new RotationBasisKey(engine, device, dataType, d), k -> {
                NDManager manager = Scalars.home(engine, device);
                float[] eye = new float[d * d];
                float[] swap = new float[d * d];
                for (int j = 0; j < d; j++) {
                    eye[j * d + j] = 1;
                    swap[((j + d / 2) % d) * d + j] = 1; // row i = (j + D/2) mod D feeds column j
                }
                return new NDArray[] {typed(manager.create(eye, new Shape(d, d)), dataType), typed(manager.create(swap, new Shape(d, d)), dataType)};
            });
        }
    }

    /** {@code array} as {@code type}, the float32 original closed where a copy was made. */
    private static NDArray typed(NDArray array, DataType type) {
        NDArray typed = array.toType(type, false);
        if (typed != array) {
            array.close();
        }
        return typed;
    }
}
