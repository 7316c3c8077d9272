package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;

/**
 * The affine projection of a decode step (one token per sequence, up to {@link #MAX_ROWS} rows)
 * with the weight split across the CPU's cores, and of a prefill where PyTorch computes on one
 * thread. PyTorch's CPU linear and matmul hand such a product to MKL, which computes it on a single
 * core whatever the intra-op thread count, and one core does not read the weights at the
 * machine's bandwidth; each core multiplying its own slice of the weight does (docs/PERFORMANCE.md,
 * "Projections of a single token split across the cores"). Slices are views of the weight (made
 * once per weight, detached from autograd), so nothing is copied.
 *
 * <p>Products of more rows (a prefill) are split the same way where PyTorch computes on one thread
 * (as {@code bin/llmzoo} runs it), since the engine's own product would then use one core; with
 * more intra-op threads the engine's product uses them.
 *
 * <p>Everything else takes the single engine call: training, a non-CPU device, an input that
 * records gradients, a small weight, one core ({@code -Dllmzoo.cpu.threads=1}), or workers busy
 * with another caller. The results agree with the single call to float rounding. Give PyTorch one
 * intra-op thread for decoding ({@code -Dai.djl.pytorch.num_threads=1}, as {@code bin/llmzoo}
 * does): its OpenMP threads, spinning between parallel regions, otherwise take the cores the slices
 * need.
 *
 * <p>One instance per projection weight ({@link io.github.djlllmzoo.blocks.ProjectionWeight#prepared}):
 * it remembers the slices of the last weight array it saw.
 */
final class SplitProjection {

    /**
     * Rows (tokens) up to which a product is split across the cores whatever PyTorch's thread
     * count: a decode step of a batch.
     */
    static final long MAX_ROWS = Long.getLong("llmzoo.projection.maxRows", 64);

    /**
     * Rows from which (up to {@link #MAX_ROWS}) {@link #linear} computes {@code weight @ x^T}: the
     * engine's product with the weight transposed (its {@code linear}) slows down with the rows;
     * up to 4 rows it is the faster one, and from 128 rows (a prefill) both run at the same speed,
     * {@code linear} with the bias fused and no transposed copy (docs/PERFORMANCE.md, "Batches
     * split across the cores too").
     */
    static final long TRANSPOSED_MIN_ROWS = 8;

    /** Weights smaller than this (elements) are not worth a hand-over. */
    static final long MIN_ELEMENTS = 1L << 17;

    private record Slices(NDArray weight, NDArray bias, NDArray[] parts, NDArray[] biases) {

        boolean of(NDArray w, NDArray b) {
            return weight == w && bias == b && !parts[0].isReleased();
        }
    }

    private final boolean fewRowKernel;
    private final boolean placeColumns;
    private final boolean fourRows;
    private volatile Slices slices;

    /**
     * A projection whose one-row (in, out) products read four weight rows at a time where the
     * output is wide ({@link FewRowProduct#FOUR_ROWS_MIN_OUT}).
     *
     * @param fewRowKernel whether products of a few rows may take {@link FewRowProduct}'s kernel
     * @param placeColumns whether each core writes its share of a product split by columns into
     *     the whole output ({@link DecodeOps#intoColumns}) instead of the caller joining the shares
     */
    SplitProjection(boolean fewRowKernel, boolean placeColumns) {
        this(fewRowKernel, placeColumns, true);
    }

    /**
     * @param fewRowKernel whether products of a few rows may take {@link FewRowProduct}'s kernel
     * @param placeColumns whether each core writes its share of a product split by columns into
     *     the whole output ({@link DecodeOps#intoColumns}) instead of the caller joining the shares
     * @param fourRows whether one row's product by an (in, out) weight may read four weight rows at
     *     a time ({@link FewRowProduct#multiplyByRows})
     */
    SplitProjection(boolean fewRowKernel, boolean placeColumns, boolean fourRows) {
        this.fewRowKernel = fewRowKernel;
        this.placeColumns = placeColumns;
        this.fourRows = fourRows;
    }

    /**
     * {@code x @ weight^T + bias}, as {@code torch.nn.functional.linear}.
     *
     * @param x input (..., in); the result is attached to its manager
     * @param weight (out, in)
     * @param bias (out), or {@code null}
     * @param training whether this is a training pass
     * @return (..., out)
     */
    NDArray linear(NDArray x, NDArray weight, NDArray bias, boolean training) {
        long rows = rows(x);
        if (!splitsRows(rows) || !CoreWorkers.inferenceOnCpu(x, training)) {
            return engineLinear(x, weight, bias);
        }
        if (fewRowKernel && FewRowProduct.applies(x, weight, bias, rows, Layout.OUT_IN)) {
            return fewRows(x, weight, bias, splittable(weight), Layout.OUT_IN);
        }
        if (splittable(weight)) {
            Slices s = slices(weight, bias, 0);
            NDArray[] parts = s.parts();
            NDArray[] biases = s.biases();
            if (!transposed(rows)) {
                NDArray whole = placed(x, weight, weight.getShape().get(0)); // (..., out), or null
                long[] offsets = offsets(parts, 0);
                NDArray[] outputs =
                        CoreWorkers.run(parts.length, i -> {
                            NDArray part = engineLinear(x, parts[i], biases == null ? null : biases[i]);
                            return whole == null ? part : into(part, null, whole, offsets[i]);
                        });
                if (outputs != null) {
                    return whole == null ? joined(outputs, -1) : closed(outputs, whole); // (..., out)
                }
                if (whole != null) {
                    whole.close();
                }
            } else {
                NDArray columns = columns(x, rows); // (in, N)
                NDArray[] outputs =
                        CoreWorkers.run(parts.length, i -> attached(parts[i].matMul(columns), x)); // (out_i, N)
                if (outputs != null) {
                    return rowsOut(joined(outputs, 0), bias, x.getShape()); // (..., out)
                }
            }
        }
        return product(x, weight, bias, rows, fewRowKernel);
    }

    /**
     * Two projections of the same input at once, each whole on one of two cores ({@code x @ w^T +
     * b} for both): SwiGLU's gate and up, attention's key and value. That takes one hand-over and
     * no joins instead of two of each. With more than two cores each product is split across all
     * of them instead.
     *
     * @param x input (..., in); the results are attached to its manager
     * @param weights two weights (out, in) of the same shape
     * @param biases their biases (out), or {@code null}s
     * @param training whether this is a training pass
     * @param fewRowKernel whether products of a few rows may take {@link FewRowProduct}'s kernel
     * @return both products (..., out), or {@code null} where they are not split (the caller then
     *     computes each as {@link #linear} would)
     */
    static NDArray[] pair(NDArray x, NDArray[] weights, NDArray[] biases, boolean training, boolean fewRowKernel) {
        long rows = rows(x);
        if (CoreWorkers.PARALLELISM != 2
                || !splitsRows(rows)
                || !CoreWorkers.inferenceOnCpu(x, training)
                || !weights[0].getShape().equals(weights[1].getShape())
                || weights[0].size() < MIN_ELEMENTS) {
            return null;
        }
        return CoreWorkers.run(2, i -> product(x, weights[i], biases[i], rows, fewRowKernel));
    }

    /**
     * The product on one core, in the engine's faster form for the number of rows: {@code weight @
     * x^T} for {@link #TRANSPOSED_MIN_ROWS} to {@link #MAX_ROWS} rows, else {@code linear}.
     */
    private static NDArray product(NDArray x, NDArray weight, NDArray bias, long rows, boolean fewRowKernel) {
        if (fewRowKernel && FewRowProduct.applies(x, weight, bias, rows, Layout.OUT_IN)) {
            return fewRows(x, weight, bias, false, Layout.OUT_IN);
        }
        if (!transposed(rows)) {
            return engineLinear(x, weight, bias);
        }
        NDArray product = attached(weight.matMul(columns(x, rows)), x); // (out, N)
        return rowsOut(product, bias, x.getShape()); // (..., out)
    }

    /**
     * Products of the same input by {@link FewRowProduct}'s kernel in one hand-over to the cores
     * ({@code x @ w_i^T + b_i} for each): attention's query, key and value. Each core fills its own
     * columns of every output, so there is nothing to join and one hand-over instead of one a
     * product.
     *
     * @param x input (..., in); the results are attached to its manager
     * @param weights weights (out_i, in)
     * @param biases their biases (out_i), or {@code null}s
     * @param training whether this is a training pass
     * @return the products (..., out_i), or {@code null} where the kernel does not take them all (a
     *     prefill's rows, a training pass, arrays it cannot read)
     */
    static NDArray[] fewRowsAll(NDArray x, NDArray[] weights, NDArray[] biases, boolean training) {
        long rows = rows(x);
        if (!CoreWorkers.inferenceOnCpu(x, training)) {
            return null;
        }
        long elements = 0;
        for (int i = 0; i < weights.length; i++) {
            if (!FewRowProduct.applies(x, weights[i], biases[i], rows, Layout.OUT_IN)) {
                return null;
            }
            elements += weights[i].size();
        }
        return fewRows(x, weights, biases, CoreWorkers.PARALLELISM > 1 && elements >= MIN_ELEMENTS, Layout.OUT_IN);
    }

    /**
     * The product by {@link FewRowProduct}'s kernel, its output columns split across the cores
     * where {@code split} (each core fills its own columns of one output: nothing to join).
     */
    private static NDArray fewRows(NDArray x, NDArray weight, NDArray bias, boolean split, Layout layout) {
        return fewRows(x, new NDArray[] {weight}, new NDArray[] {bias}, split, layout)[0];
    }

    /** {@link #fewRows(NDArray, NDArray, NDArray, boolean, Layout)} of several weights in one hand-over. */
    private static NDArray[] fewRows(NDArray x, NDArray[] weights, NDArray[] biases, boolean split, Layout layout) {
        int count = weights.length;
        NDArray[] outs = new NDArray[count];
        FewRowProduct.Operands[] products = new FewRowProduct.Operands[count];
        long elements = 0;
        for (int i = 0; i < count; i++) {
            outs[i] = FewRowProduct.output(x, weights[i], layout); // (..., out_i)
            products[i] = FewRowProduct.operands(x, weights[i], biases[i], outs[i], layout);
            elements += weights[i].size();
        }
        // One row's calls prepare nothing, so its last runs go to whichever core is free.
        CoreWorkers.share(split ? elements : 0, rows(x) == 1, (first, last, runs) -> {
            for (FewRowProduct.Operands product : products) {
                int columns = product.outFeatures();
                product.multiply(CoreWorkers.start(columns, first, runs), CoreWorkers.start(columns, last, runs));
            }
        });
        return outs;
    }

    /** Whether a product of this many rows is computed as {@code weight @ x^T}. */
    private static boolean transposed(long rows) {
        return rows >= TRANSPOSED_MIN_ROWS && rows <= MAX_ROWS;
    }

    private static NDArray engineLinear(NDArray x, NDArray weight, NDArray bias) {
        return EngineKernels.product(x, weight, bias, Layout.OUT_IN);
    }

    /** The input's rows as columns, for {@code weight @ x^T}. */
    private static NDArray columns(NDArray x, long rows) {
        Shape shape = x.getShape();
        return x.reshape(rows, shape.get(shape.dimension() - 1)).transpose(); // (in, N)
    }

    /** {@code weight @ x^T} (out, N) back to rows (..., out), with the bias added. */
    private static NDArray rowsOut(NDArray product, NDArray bias, Shape inputShape) {
        NDArray out = product.transpose(); // (N, out)
        if (bias != null) {
            out = out.add(bias);
        }
        return out.reshape(
                inputShape.slice(0, inputShape.dimension() - 1).add(product.getShape().get(0))); // (..., out)
    }

    /**
     * The slices' products joined along {@code axis}; the parts are freed at once rather than with
     * the step (a prefill's would otherwise double its activations until the step ends).
     */
    private static NDArray joined(NDArray[] parts, int axis) {
        NDArray whole = NDArrays.concat(new NDList(parts), axis);
        for (NDArray part : parts) {
            part.close();
        }
        return whole;
    }

    /**
     * The whole output (..., out) that each core writes its share into where {@link #placeColumns}
     * and the shares are float32, else {@code null} (the shares are then joined).
     */
    private NDArray placed(NDArray x, NDArray weight, long out) {
        if (!placeColumns
                || !NativeKernels.loaded()
                || x.getDataType() != DataType.FLOAT32
                || weight.getDataType() != DataType.FLOAT32) {
            return null;
        }
        Shape shape = x.getShape();
        return x.getManager().create(shape.slice(0, shape.dimension() - 1).add(out), DataType.FLOAT32);
    }

    /** Each slice's first column of the whole: the widths along {@code axis} of the slices before it. */
    private static long[] offsets(NDArray[] parts, int axis) {
        long[] offsets = new long[parts.length];
        for (int i = 1; i < parts.length; i++) {
            offsets[i] = offsets[i - 1] + parts[i - 1].getShape().get(axis);
        }
        return offsets;
    }

    /** A core's share written into its columns of {@code whole}; the share is freed by the caller. */
    private static NDArray into(NDArray part, NDArray bias, NDArray whole, long offset) {
        DecodeOps.intoColumns(part, bias, whole, offset);
        return part;
    }

    /** {@code whole}, once the shares written into it are freed. */
    private static NDArray closed(NDArray[] parts, NDArray whole) {
        for (NDArray part : parts) {
            part.close();
        }
        return whole;
    }

    /** A product made from the weight belongs to the weight's manager; it goes to the input's. */
    private static NDArray attached(NDArray product, NDArray x) {
        product.attach(x.getManager());
        return product;
    }

    private static long rows(NDArray x) {
        Shape shape = x.getShape();
        return shape.size() / shape.get(shape.dimension() - 1);
    }

    /**
     * {@code x @ weight + bias} with the weight stored (in, out), as GPT-2's {@code Conv1D}. One
     * row goes to {@link FewRowProduct#multiplyByRows}, each core reading its run of the weight's
     * rows; a decode step of 2 to 8 sequences goes to {@link FewRowProduct}'s kernel for that layout, each
     * core filling its own columns; other inference products to the engine's, split by columns
     * across the cores.
     *
     * @param x input (..., in); the result is attached to its manager
     * @param weight (in, out)
     * @param bias (out)
     * @param training whether this is a training pass
     * @return (..., out)
     */
    NDArray matMulAdd(NDArray x, NDArray weight, NDArray bias, boolean training) {
        long rows = rows(x);
        boolean inference = CoreWorkers.inferenceOnCpu(x, training);
        if (inference && fewRowKernel && FewRowProduct.appliesByRows(x, weight, bias, rows)) {
            int parts = splittable(weight) ? CoreWorkers.PARALLELISM : 1;
            return FewRowProduct.multiplyByRows(
                    x, weight, bias, parts, fourRows, task -> parts > 1 && CoreWorkers.run(parts, task) != null);
        }
        if (inference && fewRowKernel && FewRowProduct.applies(x, weight, bias, rows, Layout.IN_OUT)) {
            return fewRows(x, weight, bias, splittable(weight), Layout.IN_OUT);
        }
        Slices s =
                inference && splitsRows(rows) && splittable(weight)
                        ? slices(weight, bias, 1)
                        : null;
        if (s != null) {
            // One row goes in as a vector: the engine's matrix-vector product reads a column slice
            // (rows strided by the full width) as fast as a whole matrix; its matrix product does not.
            Shape shape = x.getShape();
            long in = weight.getShape().get(0);
            NDArray rowsIn = rows == 1 ? x.reshape(in) : x.reshape(rows, in); // (in) or (N, in)
            NDArray[] parts = s.parts();
            NDArray[] biases = s.biases();
            NDArray whole = bias == null ? null : placed(x, weight, weight.getShape().get(1)); // (..., out), or null
            long[] offsets = offsets(parts, 1);
            NDArray[] outputs = CoreWorkers.run(parts.length, i -> {
                NDArray part = rowsIn.matMul(parts[i]); // (out_i) or (N, out_i)
                return whole == null ? part : into(part, biases[i], whole, offsets[i]);
            });
            if (outputs != null) {
                if (whole != null) {
                    return closed(outputs, whole); // (..., out)
                }
                Shape out = shape.slice(0, shape.dimension() - 1).add(weight.getShape().get(1));
                return joined(outputs, -1).addi(bias).reshape(out); // (..., out)
            }
            if (whole != null) {
                whole.close();
            }
        }
        return EngineKernels.product(x, weight, bias, Layout.IN_OUT);
    }

    /**
     * {@code residual + x @ weight + bias} for one row and an (in, out) weight, added into {@code
     * residual}'s memory by {@link FewRowProduct#multiplyByRowsInto} (GPT-2's {@code c_proj} and its
     * skip connection), or {@code null} where {@link #matMulAdd}'s by-rows kernel does not take these
     * arrays or the residual is not the product's shape, float32 and dense.
     *
     * @param x input (..., in), inference on the CPU
     * @param weight (in, out)
     * @param bias (out), or {@code null}
     * @param residual the residual stream (..., out), overwritten with the sum
     * @return {@code residual}, or {@code null}
     */
    NDArray matMulAddInto(NDArray x, NDArray weight, NDArray bias, NDArray residual) {
        if (!fewRowKernel
                || residual.hasGradient()
                || !FewRowProduct.appliesByRows(x, weight, bias, rows(x))
                || !FusedProducts.takesResidual(x, residual, weight.getShape().get(1))) {
            return null;
        }
        int parts = splittable(weight) ? CoreWorkers.PARALLELISM : 1;
        return FewRowProduct.multiplyByRowsInto(
                x, weight, bias, residual, parts, fourRows, task -> parts > 1 && CoreWorkers.run(parts, task) != null);
    }

    /** Whether a product of this many rows is split: a decode step always, more on one thread. */
    private static boolean splitsRows(long rows) {
        return rows <= MAX_ROWS || TorchThreads.intraOp() == 1;
    }

    private static boolean splittable(NDArray weight) {
        return CoreWorkers.PARALLELISM > 1 && weight.size() >= MIN_ELEMENTS;
    }

    /**
     * The slices of {@code weight} along {@code axis} (and of {@code bias}), made once per pair of
     * arrays.
     */
    private Slices slices(NDArray weight, NDArray bias, int axis) {
        Slices s = slices;
        if (s != null && s.of(weight, bias)) {
            return s;
        }
        synchronized (this) {
            s = slices;
            if (s != null && s.of(weight, bias)) {
                return s;
            }
            NDArray[] parts = cut(weight.stopGradient(), axis);
            NDArray[] biases = bias == null ? null : cut(bias.stopGradient(), 0);
            s = new Slices(weight, bias, parts, biases);
            slices = s;
            return s;
        }
    }

    /** Splits {@code array} into {@link CoreWorkers#PARALLELISM} nearly equal views along {@code axis}. */
    private static NDArray[] cut(NDArray array, int axis) {
        long size = array.getShape().get(axis);
        NDList parts = array.split(CoreWorkers.bounds(size, CoreWorkers.PARALLELISM), axis);
        array.close(); // the detached handle; the views keep the storage
        return parts.toArray(new NDArray[0]);
    }
}
