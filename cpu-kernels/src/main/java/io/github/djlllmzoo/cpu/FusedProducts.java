package io.github.djlllmzoo.cpu;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A decode step's products with the elementwise step that follows them done by each core on its
 * own output columns before it hands them back: a gated MLP's {@code act(gate(x)) * up(x)} (each
 * core computes its columns of both products, then activates them in place, {@code decode_ops.c}),
 * and a projection that ends a sublayer (the MLP's down projection, the attention's output
 * projection) added into the residual stream: at one row straight into it, at 2 to 8 rows through
 * the calling thread's buffer, each core adding its columns. At a decode
 * step's few rows the arrays and calls between products, not the arithmetic, are what these save:
 * the gate and up arrays and their hand-back, the activation's call and array, the residual's
 * addition and the product's array.
 *
 * <p>The products are {@link CompressedProduct}'s kernel for compressed weights and {@link
 * FewRowProduct}'s for float32 (out, in) ones, each output exactly as those compute it alone, so the
 * results agree with the reference ({@link io.github.djlllmzoo.blocks.Kernels#gatedProject}, {@link
 * io.github.djlllmzoo.blocks.Kernels#projectAdd}) to float rounding. Used for inference on the CPU
 * (the caller's to check) unless {@code -Dllmzoo.cpu.off=gatedProduct} or {@code
 * -Dllmzoo.cpu.off=residualProduct}; where a kernel does not take the arrays the methods return {@code
 * null} and the caller computes as the reference does.
 */
final class FusedProducts {

    /** The switch that turns the gated product off: {@code -Dllmzoo.cpu.off=gatedProduct}. */
    static final String GATED_SWITCH = "gatedProduct";

    /** The switch that turns the residual product off: {@code -Dllmzoo.cpu.off=residualProduct}. */
    static final String RESIDUAL_SWITCH = "residualProduct";

    /**
     * The switch that keeps a projection with a bias (GPT-2's {@code c_proj}) out of the residual
     * product: {@code -Dllmzoo.cpu.off=residualBias}.
     */
    static final String RESIDUAL_BIAS_SWITCH = "residualBias";

    /**
     * Each calling thread's buffer for a product on its way into another array (the up projection's,
     * a batch's residual product), grown as needed.
     */
    private static final ThreadLocal<ByteBuffer> SCRATCH = new ThreadLocal<>();

    private FusedProducts() {}

    /** The runs {@code [first, last)} of {@code runs} nearly equal runs of a product's output columns. */
    @FunctionalInterface
    private interface Columns {
        void compute(ByteBuffer bias, ByteBuffer out, int first, int last, int runs);
    }

    /**
     * One product by a kernel that takes its arrays: its output width, its columns, and whether its
     * last runs may go to whichever core is free ({@link CoreWorkers#share}).
     */
    private record Product(int width, long elements, boolean pooled, Columns columns) {}

    /**
     * {@code act(x @ gate^T + b_g) * (x @ up^T + b_u)} in one hand-over to the cores; {@code null}
     * where the kernels do not take these arrays (more than 8 rows, weights of other shapes or
     * kinds, a kernel off).
     *
     * @param x input (..., in), inference on the CPU; the result is attached to its manager
     * @param gate the gate projection (I, in)
     * @param up the up projection (I, in)
     * @param activation the gate's activation
     * @param store the parameter store, or {@code null}
     * @param fewRowKernel whether float32 weights may take {@link FewRowProduct}'s kernel
     * @param compressedKernel whether compressed weights may take {@link CompressedProduct}'s kernel
     * @return (..., I), or {@code null}
     */
    static NDArray gated(
            NDArray x,
            ProjectionWeight gate,
            ProjectionWeight up,
            HiddenActivation activation,
            ParameterStore store,
            boolean fewRowKernel,
            boolean compressedKernel) {
        return gated(x, null, gate, up, activation, store, fewRowKernel, compressedKernel, true);
    }

    /**
     * {@link #gated(NDArray, ProjectionWeight, ProjectionWeight, HiddenActivation, ParameterStore,
     * boolean, boolean)} of the rows in {@code xs} (the normed rows of {@code x}, {@link
     * DecodeOps#rmsNormed}), or of {@code x}'s own where {@code xs} is {@code null}.
     *
     * @param x input (..., in), inference on the CPU: the shape and manager of the result
     * @param xs the rows to multiply, dense float32 of {@code x}'s shape, or {@code null}
     * @param gate the gate projection (I, in)
     * @param up the up projection (I, in)
     * @param activation the gate's activation
     * @param store the parameter store, or {@code null}
     * @param fewRowKernel whether float32 weights may take {@link FewRowProduct}'s kernel
     * @param compressedKernel whether compressed weights may take {@link CompressedProduct}'s kernel
     * @param prepared whether compressed weights' input may be prepared once for both products
     *     ({@link CompressedProduct#prepare})
     * @return (..., I), or {@code null}
     */
    static NDArray gated(
            NDArray x,
            ByteBuffer xs,
            ProjectionWeight gate,
            ProjectionWeight up,
            HiddenActivation activation,
            ParameterStore store,
            boolean fewRowKernel,
            boolean compressedKernel,
            boolean prepared) {
        Device device = x.getDevice();
        long rows = rows(x);
        NDArray gateBias = gate.bias(store, device, false);
        NDArray upBias = up.bias(store, device, false);
        Inputs inputs = new Inputs(x, xs, prepared, gate, up);
        Product gates = product(x, inputs, gate, gateBias, store, rows, fewRowKernel, compressedKernel);
        Product ups =
                gates == null ? null : product(x, inputs, up, upBias, store, rows, fewRowKernel, compressedKernel);
        if (ups == null || ups.width() != gates.width()) {
            return null;
        }
        int width = gates.width();
        Shape shape = x.getShape();
        NDArray out = x.getManager().create(shape.slice(0, shape.dimension() - 1).add(width), DataType.FLOAT32);
        ByteBuffer os = NativeKernels.buffer(out); // the gate's product, then the result
        ByteBuffer us = scratch(rows * width);
        ByteBuffer gbs = gateBias == null ? null : NativeKernels.buffer(gateBias);
        ByteBuffer ubs = upBias == null ? null : NativeKernels.buffer(upBias);
        int n = Math.toIntExact(rows);
        int code = DecodeOps.code(activation);
        CoreWorkers.share(gates.elements() + ups.elements(), gates.pooled() && ups.pooled(), (first, last, runs) -> {
            gates.columns().compute(gbs, os, first, last, runs);
            ups.columns().compute(ubs, us, first, last, runs);
            activateColumns(
                    os, us, n, width, CoreWorkers.start(width, first, runs), CoreWorkers.start(width, last, runs), code);
        });
        return out;
    }

    /**
     * {@code residual + x @ weight^T + bias} at 1 to {@link CompressedProduct#MAX_ROWS} rows, the
     * product added into {@code residual}'s memory. At one row the kernels add the bias to each output
     * last, reading it just before they write that output, so the residual goes in as the bias and is
     * the output; a weight's own bias (GPT-2's {@code c_proj}) is first added into each core's columns
     * of the residual by that core, where {@code biased}. At more rows (a batch's decode step) each
     * core computes its columns of the product, bias included, into the calling thread's buffer and
     * adds them into each row of the residual: bit for bit the separate product plus the residual,
     * without its array and the engine's addition. {@code null} where the kernels do not take these
     * arrays (more rows, a weight with a bias unless {@code biased}, a residual of another shape or
     * recording gradients, a kernel off).
     *
     * @param x input (..., in), 1 to 8 rows, inference on the CPU
     * @param weight the projection (out, in)
     * @param residual the residual stream (..., out), overwritten with the sum
     * @param store the parameter store, or {@code null}
     * @param fewRowKernel whether float32 weights may take {@link FewRowProduct}'s kernel
     * @param compressedKernel whether compressed weights may take {@link CompressedProduct}'s kernel
     * @param biased whether a weight with a bias is taken
     * @param prepared whether a compressed weight's input may be prepared once for all the cores' calls
     *     ({@link CompressedProduct#prepare})
     * @return {@code residual}, or {@code null}
     */
    static NDArray residual(
            NDArray x,
            ProjectionWeight weight,
            NDArray residual,
            ParameterStore store,
            boolean fewRowKernel,
            boolean compressedKernel,
            boolean biased,
            boolean prepared) {
        NDArray bias = weight.bias(store, x.getDevice(), false);
        long rows = rows(x);
        if (rows < 1 || rows > CompressedProduct.MAX_ROWS || residual.hasGradient() || (bias != null && !biased)) {
            return null;
        }
        Product product = product(
                x, new Inputs(x, null, prepared, weight), weight, bias, store, rows, fewRowKernel, compressedKernel);
        if (product == null || !takesResidual(x, residual, product.width())) {
            return null;
        }
        ByteBuffer rs = NativeKernels.buffer(residual);
        ByteBuffer bs = bias == null ? null : NativeKernels.buffer(bias);
        int width = product.width();
        if (rows > 1) {
            int n = Math.toIntExact(rows);
            ByteBuffer ps = scratch(rows * width); // (rows, width): the product, then added into the residual
            CoreWorkers.share(product.elements(), product.pooled(), (first, last, runs) -> {
                product.columns().compute(bs, ps, first, last, runs);
                addRows(rs, ps, n, width, CoreWorkers.start(width, first, runs), CoreWorkers.start(width, last, runs));
            });
            return residual;
        }
        CoreWorkers.share(product.elements(), product.pooled(), (first, last, runs) -> {
            if (bs != null) {
                addColumns(rs, bs, CoreWorkers.start(width, first, runs), CoreWorkers.start(width, last, runs));
            }
            product.columns().compute(rs, rs, first, last, runs);
        });
        return residual;
    }

    /**
     * Whether {@code residual} can take a product of {@code x} with {@code width} outputs in place:
     * the product's shape (..., width), float32, dense, on the CPU.
     *
     * @param x input (..., in)
     * @param residual the residual stream
     * @param width the product's output width
     * @return whether the residual can be the product's output
     */
    static boolean takesResidual(NDArray x, NDArray residual, long width) {
        Shape shape = x.getShape();
        return residual.getShape().equals(shape.slice(0, shape.dimension() - 1).add(width))
                && NativeKernels.denseFloat32OnCpu(residual);
    }

    /** {@code out[r, from:to] += part[r, from:to]} for each of {@code rows} rows of {@code width}. */
    private static void addRows(ByteBuffer out, ByteBuffer part, int rows, int width, int from, int to) {
        for (int r = 0; r < rows && to > from; r++) {
            int at = (r * width + from) * Float.BYTES;
            FewRowProduct.addInto(out.slice(at, (to - from) * Float.BYTES), part.slice(at, (to - from) * Float.BYTES),
                    to - from);
        }
    }

    /** {@code out[from:to] += bias[from:to]}, one row. */
    private static void addColumns(ByteBuffer out, ByteBuffer bias, int from, int to) {
        if (to > from) {
            FewRowProduct.addInto(
                    out.slice(from * Float.BYTES, (to - from) * Float.BYTES),
                    bias.slice(from * Float.BYTES, (to - from) * Float.BYTES),
                    to - from);
        }
    }

    /**
     * The input of a hand-over's products: x's rows ({@code rows}, or x's own where that is {@code
     * null}) and, where {@code prepared} allows and every weight is compressed, the form {@link
     * CompressedProduct#prepare} makes of them for those weights, made at first use, once.
     */
    private static final class Inputs {
        private final NDArray x;
        private final ByteBuffer rows;
        private final boolean prepared;
        private final ProjectionWeight[] weights;
        private ByteBuffer form;
        private boolean formMade;

        Inputs(NDArray x, ByteBuffer rows, boolean prepared, ProjectionWeight... weights) {
            this.x = x;
            this.rows = rows;
            this.prepared = prepared;
            this.weights = weights;
        }

        ByteBuffer input() {
            return rows != null ? rows : NativeKernels.buffer(x);
        }

        /** The prepared form for compressed weights, or {@code null} where there is none. */
        ByteBuffer form(int dotProducts) {
            if (!formMade) {
                formMade = true;
                CompressedWeight[] compressed = new CompressedWeight[weights.length];
                for (int i = 0; i < weights.length; i++) {
                    compressed[i] = weights[i].compressed();
                    if (compressed[i] == null) {
                        return null;
                    }
                }
                form = prepared ? CompressedProduct.prepare(input(), compressed, Math.toIntExact(rows(x)), dotProducts)
                        : null;
            }
            return form;
        }
    }

    /**
     * The product of {@code x} (its rows in {@code inputs}) with one weight by the kernel for its
     * kind, or {@code null} where that kernel is off or does not take the arrays.
     */
    private static Product product(
            NDArray x,
            Inputs inputs,
            ProjectionWeight weight,
            NDArray bias,
            ParameterStore store,
            long rows,
            boolean fewRowKernel,
            boolean compressedKernel) {
        int n = Math.toIntExact(rows);
        CompressedWeight compressed = weight.compressed();
        if (compressed != null) {
            if (!compressedKernel || !CompressedProduct.applies(x, compressed, bias, rows)) {
                return null;
            }
            ByteBuffer xs = inputs.input();
            int dotProducts = CompressedProduct.dotProducts();
            ByteBuffer form = inputs.form(dotProducts);
            return new Product(
                    compressed.outFeatures(),
                    (long) compressed.outFeatures() * compressed.inFeatures(),
                    CompressedProduct.poolsRuns(compressed, rows, form != null),
                    (bs, os, first, last, runs) -> CompressedProduct.columns(
                            xs, form, compressed, bs, os, n, first, last, runs, dotProducts));
        }
        NDArray w = weight.weight(store, x.getDevice(), false);
        if (!fewRowKernel
                || weight.layout() != Layout.OUT_IN
                || !FewRowProduct.applies(x, w, bias, rows, Layout.OUT_IN)) {
            return null;
        }
        ByteBuffer xs = inputs.input();
        ByteBuffer ws = NativeKernels.buffer(w);
        int width = Math.toIntExact(w.getShape().get(0));
        int in = Math.toIntExact(w.getShape().get(1));
        return new Product(
                width,
                (long) width * in,
                rows == 1,
                (bs, os, first, last, runs) -> FewRowProduct.multiplyOutIn(
                        xs, ws, bs, os, n, in, width, CoreWorkers.start(width, first, runs),
                        CoreWorkers.start(width, last, runs)));
    }

    /** The calling thread's buffer of at least {@code floats} floats ({@link #SCRATCH}). */
    private static ByteBuffer scratch(long floats) {
        ByteBuffer buffer = SCRATCH.get();
        if (buffer == null || buffer.capacity() < floats * Float.BYTES) {
            buffer = ByteBuffer.allocateDirect(Math.toIntExact(floats * Float.BYTES)).order(ByteOrder.nativeOrder());
            SCRATCH.set(buffer);
        }
        return buffer;
    }

    private static long rows(NDArray x) {
        Shape shape = x.getShape();
        return shape.size() / shape.get(shape.dimension() - 1);
    }

    /**
     * {@code gateOut = act(gateOut) * up} on the columns {@code [from, to)} of {@code rows} rows of
     * {@code width} floats.
     */
    private static native void activateColumns(
            ByteBuffer gateOut, ByteBuffer up, int rows, int width, int from, int to, int activation);
}
