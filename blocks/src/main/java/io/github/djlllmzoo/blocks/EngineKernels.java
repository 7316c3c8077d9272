package io.github.djlllmzoo.blocks;

import ai.djl.engine.EngineException;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.HiddenActivation;

/**
 * The reference {@link Kernels}: every operation as the engine's own NDArray calls, on any engine,
 * device and type, recording gradients in training. Blocks that are not part of a model, and models
 * for which no {@link KernelsProvider} applies (on a GPU, every model), compute with these.
 *
 * <p>At inference they make as few engine calls as the engine's API allows, each a kernel launch
 * on a GPU: projections of one input as one product over their weights concatenated once, (out,
 * in) weights through a kept transposed view, a row's RMSNorm before the products as one layer
 * norm, a decode step's rotation as one product over the heads, the cache's new position written by
 * a split and a copy and the attention over the whole buffers ({@link EngineForms}). The single
 * operations ({@link #rmsNorm}, {@link #rotate}) stay the plain reference other kernels are
 * checked against. A training pass takes the plain operations, whose gradients reach
 * the parameters.
 */
public final class EngineKernels implements Kernels {

    /** The one instance (it has no state). */
    public static final EngineKernels INSTANCE = new EngineKernels();

    /** The switch that turns the inference forms off ({@code -Dllmzoo.engineForms=false}): the plain operations. */
    public static final String FORMS_PROPERTY = "llmzoo.engineForms";

    /** Every element: an index of a whole view. */
    private static final NDIndex ALL = new NDIndex("...");

    private EngineKernels() {}

    /**
     * The engine's product of {@code x} and a weight stored as {@code layout} says, plus the bias.
     *
     * @param x input (..., in); the result is attached to its manager
     * @param weight (out, in) or (in, out)
     * @param bias (out), or {@code null}
     * @param layout how {@code weight} is stored
     * @return (..., out)
     */
    public static NDArray product(NDArray x, NDArray weight, NDArray bias, ProjectionWeight.Layout layout) {
        if (layout == ProjectionWeight.Layout.OUT_IN) {
            return x.getNDArrayInternal().linear(x, weight, bias).singletonOrThrow();
        }
        NDArray product = x.matMul(weight);
        return bias == null ? product : product.addi(bias);
    }

    @Override
    public NDArray project(NDArray x, ProjectionWeight weight, ParameterStore store, boolean training) {
        if (training) {
            EngineForms.weightsChanged(); // the optimizer updates them in place after this pass
        } else if (forms(false) && weight.compressed() == null && weight.layout() == ProjectionWeight.Layout.OUT_IN) {
            // x @ w^T through a kept view of w^T: one engine call where linear takes two (t, matmul)
            NDArray product = x.matMul(EngineForms.transposed(weight, weight.weight(store, x.getDevice(), false)));
            NDArray bias = weight.bias(store, x.getDevice(), false);
            return bias == null ? product : product.addi(bias);
        }
        NDArray w = weight.weight(store, x, training);
        NDArray product =
                product(
                        x,
                        w,
                        weight.bias(store, x.getDevice(), training),
                        weight.compressed() == null ? weight.layout() : ProjectionWeight.Layout.OUT_IN);
        if (weight.compressed() != null) {
            w.close(); // widened for this product only
        }
        return product;
    }

    @Override
    public NDArray[] projectPair(
            NDArray x, ProjectionWeight first, ProjectionWeight second, ParameterStore store, boolean training) {
        return projectAll(x, new ProjectionWeight[] {first, second}, store, training);
    }

    @Override
    public NDArray[] projectAll(NDArray x, ProjectionWeight[] weights, ParameterStore store, boolean training) {
        EngineForms.Fused fused =
                forms(training) && weights.length > 1 ? EngineForms.fused(weights, store, x.getDevice()) : null;
        if (fused == null) {
            NDArray[] out = new NDArray[weights.length];
            for (int i = 0; i < weights.length; i++) {
                out[i] = project(x, weights[i], store, training);
            }
            return out;
        }
        NDArray all = fusedProduct(x, fused); // (..., Σout)
        NDList parts = all.split(cumulative(fused.outs(), fused.outs().length - 1), x.getShape().dimension() - 1);
        return parts.toArray(new NDArray[0]);
    }

    /** {@code x} times the fused weight, plus the fused bias: one product for several projections. */
    private static NDArray fusedProduct(NDArray x, EngineForms.Fused fused) {
        NDArray all = x.matMul(fused.transposed()); // (..., Σout)
        return fused.bias() == null ? all : all.addi(fused.bias());
    }

    /** The first {@code count} running sums of {@code sizes}: split points. */
    private static long[] cumulative(long[] sizes, int count) {
        long[] points = new long[count];
        long sum = 0;
        for (int i = 0; i < count; i++) {
            sum += sizes[i];
            points[i] = sum;
        }
        return points;
    }

    @Override
    public NDArray[] normedProjectAll(
            NDArray x,
            NDArray normWeight,
            float eps,
            boolean unitOffset,
            ProjectionWeight[] weights,
            Shape[] shapes,
            ParameterStore store,
            boolean training) {
        EngineForms.Fused fused = fusedHeads(x, weights, shapes, store, training);
        long headDim = shapes[0].get(3);
        if (fused == null) {
            return Kernels.super.normedProjectAll(x, normWeight, eps, unitOffset, weights, shapes, store, training);
        }
        // The products of the normed pair (B, 2, E), (B, 2, Σ h_i·D), are the heads (B, 2·Σ h_i, 1, D),
        // the first Σ h_i those of x (the others, of the pair's zero row, are dropped): one reshape
        // and one split make the results, where the norm's split, then a split and a reshape per
        // result would take five.
        NDArray all = fusedProduct(normedPair(x, normWeight, eps, unitOffset), fused);
        long[] heads = new long[shapes.length + 1];
        long total = 0;
        for (int i = 0; i < shapes.length; i++) {
            heads[i] = shapes[i].get(1);
            total += heads[i];
        }
        heads[shapes.length] = total; // the zero row's
        NDArray asHeads = all.reshape(shapes[0].get(0), 2 * total, 1, headDim); // (B, 2·Σh, 1, D)
        NDList parts = asHeads.split(cumulative(heads, shapes.length), 1);
        return parts.subNDList(0, shapes.length).toArray(new NDArray[0]);
    }

    @Override
    public NDArray[] normedProjectRotate(
            NDArray x,
            NDArray normWeight,
            float eps,
            boolean unitOffset,
            ProjectionWeight[] weights,
            Shape[] shapes,
            NDList cosSin,
            ParameterStore store,
            boolean training) {
        EngineForms.Fused fused = fusedHeads(x, weights, shapes, store, training);
        long headDim = shapes[0].get(3);
        if (fused == null) {
            return Kernels.super.normedProjectRotate(
                    x, normWeight, eps, unitOffset, weights, shapes, cosSin, store, training);
        }
        // As normedProjectAll, the heads rotated before they are split: one product over all of
        // them with a rotation per head (the values' and the zero row's the identity)
        long queries = shapes[0].get(1);
        long keys = shapes[1].get(1);
        long total = queries + keys + shapes[2].get(1);
        NDArray all = fusedProduct(normedPair(x, normWeight, eps, unitOffset), fused); // (B, 2, Σ h_i·D)
        long b = shapes[0].get(0);
        NDArray heads = all.reshape(b * 2 * total, 1, headDim); // (B·2Σh, 1, D)
        // bmm, not matmul: matmul's own reshapes and expands of 4-d operands are host work of their own
        NDArray rotated = heads.batchMatMul(EngineForms.rotationPerHead(cosSin, b, queries + keys, 2 * total))
                .reshape(b, 2 * total, 1, headDim); // (B, 2·Σh, 1, D)
        return rotated.split(new long[] {queries, queries + keys, total}, 1).subNDList(0, 3).toArray(new NDArray[0]);
    }

    @Override
    public NDArray normedGatedProject(
            NDArray x,
            NDArray normWeight,
            float eps,
            boolean unitOffset,
            ProjectionWeight gate,
            ProjectionWeight up,
            HiddenActivation activation,
            ParameterStore store,
            boolean training) {
        if (!forms(training) || !pairable(x)) {
            return Kernels.super.normedGatedProject(
                    x, normWeight, eps, unitOffset, gate, up, activation, store, training);
        }
        NDArray pair = normedPair(x, normWeight, eps, unitOffset); // (..., 2, E): the norm in two calls where it takes six
        EngineForms.Fused fused = up == null ? null : EngineForms.fused(new ProjectionWeight[] {gate, up}, store, x.getDevice());
        if (fused == null) {
            NDArray normed = pair.split(2, x.getShape().dimension() - 2).get(0);
            return gatedProject(normed, gate, up, activation, store, training); // (..., 1, I)
        }
        // Both rows of the pair through the fused product (the zero row's products are zeros, and
        // free at a decode step's few rows), then x's gate and up split out of the rows laid end to
        // end: one split where dropping the zero row first takes one more
        NDArray all = fusedProduct(pair, fused); // (..., 2, 2I)
        Shape shape = all.getShape();
        int last = shape.dimension() - 1;
        long width = fused.outs()[0];
        NDArray rows = all.reshape(shape.slice(0, last - 1).add(1, 2 * shape.get(last))); // (..., 1, 4I)
        NDList parts = rows.split(new long[] {width, width + fused.outs()[1]}, last);
        return activate(parts.get(0), parts.get(1), activation, false); // (..., 1, I)
    }

    /**
     * The fused form of a decode step's normed products, or {@code null} where they take the plain
     * operations: in training, for weights that cannot be one product, shapes other than heads of
     * one position, or rows the layer-norm form does not take.
     */
    private static EngineForms.Fused fusedHeads(
            NDArray x, ProjectionWeight[] weights, Shape[] shapes, ParameterStore store, boolean training) {
        if (!forms(training) || !pairable(x) || !headsOfOnePosition(shapes)) {
            return null;
        }
        return EngineForms.fused(weights, store, x.getDevice());
    }

    /** Whether every shape is (B, h_i, 1, D) with the same B and D. */
    private static boolean headsOfOnePosition(Shape[] shapes) {
        long headDim = shapes[0].get(shapes[0].dimension() - 1);
        for (Shape shape : shapes) {
            if (shape.dimension() != 4 || shape.get(2) != 1 || shape.get(3) != headDim
                    || shape.get(0) != shapes[0].get(0)) {
                return false;
            }
        }
        return true;
    }

    @Override
    public NDArray attend(
            NDArray q, KeyValues kv, NDArray mask, AttentionScores scores, float dropout, boolean training) {
        KeyValues.Pending pending = kv.pending();
        if (pending != null && pending.rowSlots() == null && forms(training) && !kv.storesOtherType()
                && write(pending.keyBuffer(), pending.keys(), pending.slot())
                && write(pending.valueBuffer(), pending.values(), pending.slot())) {
            kv.pendingWritten();
            if (mask == null && q.getShape().get(2) == 1) {
                return attendOverBuffers(q, pending.keyBuffer(), pending.valueBuffer(), kv.length(), scores);
            }
        }
        return ScaledDotProductAttention.attend(q, kv.keys(), kv.values(), mask, scores, dropout, training);
    }

    /**
     * A decode step's attention over a cache's whole buffers, the slots past the filled ones masked
     * out, rather than over views of the filled part (two engine calls fewer, one mask added). The
     * products are batched products ({@code bmm}) over (B·H_kv) of the query groups and the buffers'
     * kept views ({@link EngineForms#batchedView}): {@code matmul} of the 4-d arrays would reshape and
     * expand them at every call, and the keys' transposition would be a call of its own.
     *
     * @param q queries (B, H, 1, D)
     * @param keyBuffer (B, H_kv, capacity, D), its first {@code length} slots filled
     * @param valueBuffer (B, H_kv, capacity, D)
     * @return the attended values (B, H, 1, D)
     */
    private static NDArray attendOverBuffers(
            NDArray q, NDArray keyBuffer, NDArray valueBuffer, int length, AttentionScores rule) {
        long b = q.getShape().get(0);
        long h = q.getShape().get(1);
        long d = q.getShape().get(3);
        long hKv = keyBuffer.getShape().get(1);
        long capacity = keyBuffer.getShape().get(2);
        NDArray grouped = q.reshape(b * hKv, h / hKv, d); // (B·Hkv, G, D)
        NDArray scores = ScaledDotProductAttention.scaled(
                grouped.batchMatMul(EngineForms.batchedView(keyBuffer, true)), rule, q); // (B·Hkv, G, C)
        if (length < capacity) {
            scores.addi(EngineForms.unfilledMask(q, capacity, length)); // (1, C)
        }
        NDArray out = scores.softmax(-1).batchMatMul(EngineForms.batchedView(valueBuffer, false)); // (B·Hkv, G, D)
        return out.reshape(b, h, 1, d);
    }

    /**
     * Copies {@code rows} (B, H_kv, T, D) into {@code buffer} (B, H_kv, capacity, D) at [slot, slot +
     * T) through a view a split makes: a split and a copy, where the cache's indexed write takes
     * four calls.
     *
     * @return false, having written nothing, where autograd records the buffer (a thread in grad
     *     mode, whose writes made the buffer part of a graph): it forbids writing into a split's
     *     views, and the cache writes them then; such a buffer is not tried again
     */
    private static boolean write(NDArray buffer, NDArray rows, int slot) {
        if (EngineForms.recordedBuffer(buffer)) {
            return false;
        }
        long t = rows.getShape().get(2);
        NDList parts = buffer.split(new long[] {slot, slot + t}, 2); // views: [:slot], [slot:slot+T], [slot+T:]
        try {
            parts.get(1).set(ALL, rows);
            return true;
        } catch (EngineException e) { // checked before anything is written
            EngineForms.bufferRecorded(buffer);
            return false;
        } finally {
            parts.close();
        }
    }

    @Override
    public NDArray rmsNorm(NDArray x, NDArray weight, float eps, boolean unitOffset, boolean training) {
        DataType inputType = x.getDataType();
        boolean widen = inputType != DataType.FLOAT32 && inputType != DataType.FLOAT64;
        NDArray h = widen ? x.toType(DataType.FLOAT32, false) : x;
        NDArray meanSquare = h.square().mean(new int[] {-1}, true); // (..., 1)
        // pow -0.5 is torch's rsqrt; constants from Scalars, not made per call
        NDArray normed = h.mul(meanSquare.addi(Scalars.of(eps, h)).pow(Scalars.of(-0.5, h)));
        if (unitOffset) {
            NDArray scale = (widen ? weight.toType(DataType.FLOAT32, false) : weight).add(Scalars.of(1, h));
            NDArray scaled = normed.mul(scale);
            return widen ? scaled.toType(inputType, false) : scaled;
        }
        return (widen ? normed.toType(inputType, false) : normed).mul(weight);
    }

    /** Whether the inference forms apply: not in training, nor with {@link #FORMS_PROPERTY} false. */
    private static boolean forms(boolean training) {
        return !training && !"false".equals(System.getProperty(FORMS_PROPERTY));
    }

    /** Whether {@code x} is rows (..., 1, E) of a type layer_norm takes, which {@link #normedPair} norms. */
    private static boolean pairable(NDArray x) {
        Shape shape = x.getShape();
        return shape.dimension() >= 2 && shape.get(shape.dimension() - 2) == 1
                && (x.getDataType() == DataType.FLOAT32 || x.getDataType() == DataType.FLOAT16);
    }

    /**
     * RMSNorm of rows (..., 1, E) as a layer norm over the pair [x, -x] (whose mean is 0 and variance
     * {@code mean(x²)}) with the scale as weight of the first and 0 of the second: two engine calls.
     *
     * @return (..., 2, E): the normed rows, then zeros
     */
    private static NDArray normedPair(NDArray x, NDArray weight, float eps, boolean unitOffset) {
        NDArray[] affine = EngineForms.normAffine(weight, unitOffset, x); // signs (2, 1), gamma, beta (2, E)
        NDArray pair = x.mul(affine[0]); // (..., 2, E)
        return pair.getNDArrayInternal()
                .layerNorm(pair, affine[1].getShape(), affine[1], affine[2], eps)
                .singletonOrThrow();
    }

    @Override
    public NDArray layerNorm(NDArray x, NDArray weight, NDArray bias, float eps, boolean training) {
        Shape normalized = new Shape(x.getShape().get(x.getShape().dimension() - 1));
        return x.getNDArrayInternal().layerNorm(x, normalized, weight, bias, eps).singletonOrThrow();
    }

    @Override
    public NDArray[] rotate(NDArray q, NDArray k, NDList cosSin, boolean training) {
        return new NDArray[] {RotaryEmbedding.rotate(q, cosSin), RotaryEmbedding.rotate(k, cosSin)};
    }

    @Override
    public NDArray activate(NDArray gate, NDArray up, HiddenActivation activation, boolean training) {
        NDArray activated =
                activation == HiddenActivation.SILU ? Activations.silu(gate) : Activations.geluNew(gate);
        return up == null ? activated : activated.mul(up);
    }

    @Override
    public void closeStep(NDManager step) {
        StepCloser.close(step);
    }

    @Override
    public String toString() {
        return "the engine's operations";
    }
}
