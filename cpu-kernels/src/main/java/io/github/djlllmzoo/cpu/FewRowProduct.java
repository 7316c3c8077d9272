package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.function.IntFunction;
import java.util.function.Predicate;

/**
 * The affine product of {@link #minRows} to {@link #MAX_ROWS} rows (a decode step of a batch) by a
 * native kernel ({@code cpu-kernels/src/main/native/few_row_product.c}) that reads each
 * weight element once for all rows, for a weight in either {@link Layout}. oneMKL, as PyTorch calls
 * it, reads the weight of such a product well below the memory bandwidth it reaches for one row,
 * so a batch's decode step would be bound by the product rather than by reading the weights
 * (docs/PERFORMANCE.md, "A few-row product kernel of our own").
 *
 * <p>It is used where {@link NativeKernels} are loaded (CpuIsa: AVX-512, AVX2 or NEON), for
 * inference on float32 CPU arrays that PyTorch holds contiguously, unless {@code
 * -Dllmzoo.cpu.off=fewRowProduct}; everything else takes the engine's product. The kernel records no
 * gradients: callers use it for inference only.
 */
final class FewRowProduct {

    /** The switch that turns the kernel off: {@code -Dllmzoo.cpu.off=fewRowProduct}. */
    static final String SWITCH = "fewRowProduct";

    /** The most rows the kernel multiplies in one pass over the weight. */
    static final int MAX_ROWS = 8;

    /** The fewest rows for both layouts where {@code -Dllmzoo.fewRowProduct.minRows} sets them. */
    private static final Integer MIN_ROWS_SET = Integer.getInteger("llmzoo.fewRowProduct.minRows");

    /** The switch that reads one row of an (in, out) weight by columns instead of by rows ({@link #multiplyByRows}). */
    static final String BY_ROWS_SWITCH = "fewRowProduct.byRows";

    /**
     * Whether one row of an (in, out) weight is read by rows ({@link #multiplyByRows}), unless
     * {@code -Dllmzoo.cpu.off} lists {@link #BY_ROWS_SWITCH}.
     */
    private static final boolean BY_ROWS = KernelSwitches.on(BY_ROWS_SWITCH);

    /**
     * The switch that keeps {@link #multiplyByRows} at one weight row at a time whatever the output
     * width: {@code -Dllmzoo.cpu.off=fewRowProduct.fourRows}.
     */
    static final String FOUR_ROWS_SWITCH = "fewRowProduct.fourRows";

    /**
     * The output width from which {@link #multiplyByRows} takes four weight rows at a time, reading
     * and writing each output once per four rows: at 1024 outputs (4 KB) and more the output,
     * written once a row, no longer stays in L1 beside the weight stream (two cores, AMD EPYC Zen 4:
     * 768 x 3072 22-23 against 34-36 GB/s, 1536 x 1024 24-31 against 31-33), while at 768 outputs
     * one row at a time reads faster (3072 x 768: 35-39 against 29-30; docs/PERFORMANCE.md,
     * "GPT-2's decode step at batch 1").
     */
    static final int FOUR_ROWS_MIN_OUT = 1024;

    /** Each calling thread's buffers for the shares of {@link #multiplyByRows} past the first. */
    private static final ThreadLocal<Shares> SHARES = ThreadLocal.withInitial(Shares::new);

    private FewRowProduct() {}

    /**
     * The fewest rows the kernel is used for with a weight in {@code layout}, unless {@code
     * -Dllmzoo.fewRowProduct.minRows} sets them: one row of an (out, in) weight, which the kernel
     * reads as one sequential stream a core, faster than oneMKL's matrix-vector product; two of an
     * (in, out) weight, whose columns are pieces of every row: its single row goes to {@link
     * #multiplyByRows} instead (docs/PERFORMANCE.md, "One weight stream per core in the float32
     * kernel", "GPT-2's (in, out) weights read by rows").
     *
     * @param layout how the weight is stored
     * @return the fewest rows {@link #applies} accepts
     */
    static int minRows(Layout layout) {
        if (MIN_ROWS_SET != null) {
            return MIN_ROWS_SET;
        }
        return layout == Layout.OUT_IN ? 1 : 2;
    }

    /**
     * Whether the kernel computes the product of {@code x} and {@code weight} plus {@code bias}:
     * inference and the switch are the caller's to check; here the library must be loaded, the
     * arrays float32 on the CPU, held contiguously, of matching sizes, and {@code x} must have
     * {@link #minRows} to {@link #MAX_ROWS} rows.
     *
     * @param x input (..., in)
     * @param weight (out, in) or (in, out), as {@code layout} says
     * @param bias (out), or {@code null}
     * @param rows the rows of {@code x}
     * @param layout how {@code weight} is stored
     * @return whether {@link #multiply} may be called with these arrays
     */
    static boolean applies(NDArray x, NDArray weight, NDArray bias, long rows, Layout layout) {
        if (!NativeKernels.loaded() || rows < minRows(layout) || rows > MAX_ROWS) {
            return false;
        }
        return fits(x, weight, bias, layout);
    }

    /** Whether the arrays are float32 on the CPU, held contiguously, of matching sizes. */
    private static boolean fits(NDArray x, NDArray weight, NDArray bias, Layout layout) {
        Shape w = weight.getShape();
        Shape in = x.getShape();
        return w.dimension() == 2
                && layout.in(w) == in.get(in.dimension() - 1)
                && w.size() <= Integer.MAX_VALUE
                && (bias == null || bias.getShape().dimension() == 1 && bias.getShape().get(0) == layout.out(w))
                && NativeKernels.denseFloat32OnCpu(x)
                && NativeKernels.denseFloat32OnCpu(weight)
                && (bias == null || NativeKernels.denseFloat32OnCpu(bias));
    }

    /**
     * An uninitialized product for {@link #multiply} to fill, in {@code x}'s manager and already in
     * the product's shape (..., out), its rows in {@code x}'s order: no reshape after the kernel.
     *
     * @param x input (..., in)
     * @param weight the weight
     * @param layout how {@code weight} is stored
     * @return (..., out)
     */
    static NDArray output(NDArray x, NDArray weight, Layout layout) {
        Shape in = x.getShape();
        return x.getManager()
                .create(in.slice(0, in.dimension() - 1).add(layout.out(weight.getShape())), DataType.FLOAT32);
    }

    /**
     * Computes the columns {@code [from, to)} of the product {@code out} ({@code x @ weight^T +
     * bias} or {@code x @ weight + bias}, as {@code layout} says); other columns are left as they
     * are, so threads may fill disjoint columns of one output at once.
     *
     * @param x input (..., in) for which {@link #applies} holds
     * @param weight (out, in) or (in, out)
     * @param bias (out), or {@code null}
     * @param out (..., out) from {@link #output}
     * @param from first column
     * @param to past the last column
     * @param layout how {@code weight} is stored
     */
    static void multiply(
            NDArray x, NDArray weight, NDArray bias, NDArray out, long from, long to, Layout layout) {
        operands(x, weight, bias, out, layout).multiply(Math.toIntExact(from), Math.toIntExact(to));
    }

    /**
     * The arrays of one product as the kernel reads them (direct buffers, one engine call each),
     * made once for all the runs of columns that threads then fill ({@link Operands#multiply}).
     *
     * @param x input (..., in) for which {@link #applies} holds
     * @param weight (out, in) or (in, out)
     * @param bias (out), or {@code null}
     * @param out (..., out) from {@link #output}
     * @param layout how {@code weight} is stored
     * @return the product's operands
     */
    static Operands operands(NDArray x, NDArray weight, NDArray bias, NDArray out, Layout layout) {
        Shape w = weight.getShape();
        int outFeatures = Math.toIntExact(layout.out(w));
        return new Operands(
                NativeKernels.buffer(x),
                NativeKernels.buffer(weight),
                bias == null ? null : NativeKernels.buffer(bias),
                NativeKernels.buffer(out),
                Math.toIntExact(out.size() / outFeatures),
                Math.toIntExact(layout.in(w)),
                outFeatures,
                layout);
    }

    /** A product's buffers and sizes, as {@link #operands} makes them. */
    record Operands(
            ByteBuffer x, ByteBuffer weight, ByteBuffer bias, ByteBuffer out, int rows, int in, int outFeatures,
            Layout layout) {

        /**
         * Computes the columns {@code [from, to)} of the product, as {@link FewRowProduct#multiply}.
         *
         * @param from first column
         * @param to past the last column
         */
        void multiply(int from, int to) {
            if (layout == Layout.OUT_IN) {
                multiplyOutIn(x, weight, bias, out, rows, in, outFeatures, from, to);
            } else {
                multiplyInOut(x, weight, bias, out, rows, in, outFeatures, from, to);
            }
        }
    }

    /**
     * Whether {@link #multiplyByRows} computes the product of {@code x} and an (in, out) {@code
     * weight} plus {@code bias}: one row of {@code x}, the arrays as {@link #applies} requires
     * them. Inference and the switch are the caller's to check.
     *
     * @param x input (..., in)
     * @param weight (in, out)
     * @param bias (out), or {@code null}
     * @param rows the rows of {@code x}
     * @return whether {@link #multiplyByRows} may be called with these arrays
     */
    static boolean appliesByRows(NDArray x, NDArray weight, NDArray bias, long rows) {
        return rows == 1 && BY_ROWS && NativeKernels.loaded() && fits(x, weight, bias, Layout.IN_OUT);
    }

    /**
     * The product of one row with an (in, out) weight, the weight's rows cut into {@code parts}
     * runs ({@code bounds}, as {@link CoreWorkers#bounds} gives them), each run's share computed by
     * {@code run} (on the calling thread, or split across the cores) and the shares summed: each
     * core reads its run of rows as one sequential stream, where a share of the columns would be
     * pieces of every row (docs/PERFORMANCE.md, "GPT-2's (in, out) weights read by rows").
     *
     * @param x input (..., in), one row, for which {@link #appliesByRows} holds
     * @param weight (in, out)
     * @param bias (out), or {@code null}
     * @param parts the runs of rows, 1 to {@link CoreWorkers#PARALLELISM}
     * @param fourRows whether four weight rows at a time are read where the output is at least
     *     {@link #FOUR_ROWS_MIN_OUT} wide
     * @param run computes the tasks it is given, {@code task(0)} .. {@code task(parts - 1)}, and
     *     says whether it did (else they are computed here, one after another)
     * @return (..., out)
     */
    static NDArray multiplyByRows(
            NDArray x, NDArray weight, NDArray bias, int parts, boolean fourRows,
            Predicate<IntFunction<NDArray>> run) {
        NDArray out = output(x, weight, Layout.IN_OUT); // (..., out)
        ByteBuffer os = NativeKernels.buffer(out);
        byRows(x, weight, os, bias == null ? null : NativeKernels.buffer(bias), null, parts, fourRows, run, out);
        return out;
    }

    /**
     * {@link #multiplyByRows} added into {@code residual}'s memory, {@code residual + x @ weight +
     * bias}: the first run's share starts from the residual, the second's from the bias, and the
     * shares are summed into the residual as before (one run: the bias added after it), with no
     * output array and no addition of the engine's.
     *
     * @param x input (..., in), one row, for which {@link #appliesByRows} holds
     * @param weight (in, out)
     * @param bias (out), or {@code null}
     * @param residual (..., out), float32, dense, on the CPU; overwritten with the sum
     * @param parts the runs of rows, 1 to {@link CoreWorkers#PARALLELISM}
     * @param fourRows as {@link #multiplyByRows} takes it
     * @param run as {@link #multiplyByRows} takes it
     * @return {@code residual}
     */
    static NDArray multiplyByRowsInto(
            NDArray x, NDArray weight, NDArray bias, NDArray residual, int parts, boolean fourRows,
            Predicate<IntFunction<NDArray>> run) {
        ByteBuffer rs = NativeKernels.buffer(residual);
        ByteBuffer bs = bias == null ? null : NativeKernels.buffer(bias);
        byRows(x, weight, rs, rs, bs, parts, fourRows, run, residual);
        if (parts == 1 && bs != null) {
            addInto(rs, bs, Math.toIntExact(weight.getShape().get(1)));
        }
        return residual;
    }

    /**
     * The shares of one row's product by the weight's rows summed into {@code out}: the first run's
     * share is {@code out} itself, starting from {@code firstStart} (the bias, or {@code out}'s own
     * values where that is {@code out}), the second's starts from {@code secondStart}, the others
     * from zeros.
     */
    private static void byRows(
            NDArray x, NDArray weight, ByteBuffer out, ByteBuffer firstStart, ByteBuffer secondStart, int parts,
            boolean fourRows, Predicate<IntFunction<NDArray>> run, NDArray result) {
        Shape w = weight.getShape();
        int in = Math.toIntExact(w.get(0));
        int outFeatures = Math.toIntExact(w.get(1));
        boolean four = fourRows && outFeatures >= FOUR_ROWS_MIN_OUT;
        ByteBuffer xs = NativeKernels.buffer(x);
        ByteBuffer ws = NativeKernels.buffer(weight);
        ByteBuffer[] shares = new ByteBuffer[parts];
        shares[0] = out;
        for (int i = 1; i < parts; i++) {
            shares[i] = SHARES.get().share(i - 1, outFeatures);
        }
        long[] bounds = CoreWorkers.bounds(in, parts);
        IntFunction<NDArray> task =
                i -> {
                    int from = i == 0 ? 0 : Math.toIntExact(bounds[i - 1]);
                    int to = i == parts - 1 ? in : Math.toIntExact(bounds[i]);
                    ByteBuffer start = i == 0 ? firstStart : i == 1 ? secondStart : null;
                    multiplyInOutRows(xs, ws, start, shares[i], outFeatures, from, to, four);
                    return result;
                };
        if (!run.test(task)) {
            for (int i = 0; i < parts; i++) {
                task.apply(i);
            }
        }
        for (int i = 1; i < parts; i++) {
            addInto(out, shares[i], outFeatures);
        }
    }

    /** Direct buffers for the shares of a product, grown to the widest product asked for. */
    private static final class Shares {

        private ByteBuffer[] buffers = new ByteBuffer[0];

        ByteBuffer share(int index, int floats) {
            if (index >= buffers.length) {
                buffers = Arrays.copyOf(buffers, index + 1);
            }
            ByteBuffer buffer = buffers[index];
            if (buffer == null || buffer.capacity() < floats * Float.BYTES) {
                buffer = ByteBuffer.allocateDirect(floats * Float.BYTES).order(ByteOrder.nativeOrder());
                buffers[index] = buffer;
            }
            return buffer;
        }
    }

    private static native void multiplyInOutRows(
            ByteBuffer x, ByteBuffer weight, ByteBuffer bias, ByteBuffer part, int outFeatures, int from, int to,
            boolean four);

    /** {@code out += part}, {@code count} floats of each. */
    static native void addInto(ByteBuffer out, ByteBuffer part, int count);

    /**
     * The columns {@code [from, to)} of {@code out = x @ weight^T + bias}, weight (out, in), over
     * buffers of arrays {@link #applies} accepts; each output is its sum plus the bias, read just
     * before the output is written, so the bias may be the output itself.
     */
    static native void multiplyOutIn(
            ByteBuffer x, ByteBuffer weight, ByteBuffer bias, ByteBuffer out, int rows, int in, int outFeatures,
            int from, int to);

    private static native void multiplyInOut(
            ByteBuffer x, ByteBuffer weight, ByteBuffer bias, ByteBuffer out, int rows, int in, int outFeatures,
            int from, int to);
}
