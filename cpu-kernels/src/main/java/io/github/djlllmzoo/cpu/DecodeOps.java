package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The elementwise operations of a decode step or a prefill, each one call of a native
 * kernel ({@code cpu-kernels/src/main/native/decode_ops.c}) writing one output: RMSNorm, LayerNorm,
 * the rotary embedding of query or key heads (a decode step's both in one call), the MLP's activation
 * (times the up projection), and a step's greedy pick ({@link #argMax}). The engine
 * computes each as a chain of five or six calls with an array each, whose fixed cost, not the
 * arithmetic, is their time at a decode step's few rows (docs/PERFORMANCE.md, "A decode step's
 * elementwise operations"); at a prefill's rows they are passes over memory on one core
 * ({@code bin/llmzoo} runs PyTorch on one intra-op thread), so from {@link #SPLIT_MIN_ELEMENTS}
 * elements the kernels' rows, elements or heads are split across the cores ({@link CoreWorkers}).
 *
 * <p>Used for inference where {@link NativeKernels} are loaded, on float32 CPU arrays held densely
 * (query and key heads also as the transposed view of a projection's rows), unless {@code
 * -Dllmzoo.cpu.off=decodeOps} (LayerNorm: {@code -Dllmzoo.cpu.off=layerNorm}); the results agree with
 * the engine's to float rounding. Inference and the switches are the caller's to check.
 */
final class DecodeOps {

    /** The switch that turns the kernels off: {@code -Dllmzoo.cpu.off=decodeOps}. */
    static final String SWITCH = "decodeOps";

    /**
     * The switch that leaves LayerNorm to the engine (one core, a pass for the moments and one for
     * the output): {@code -Dllmzoo.cpu.off=layerNorm}.
     */
    static final String LAYER_NORM_SWITCH = "layerNorm";

    /**
     * The switch that makes a product split by columns across the cores join its shares on the
     * calling core after all are done ({@link SplitProjection}), instead of each core writing its
     * own share into the whole output ({@link #intoColumns}): {@code -Dllmzoo.cpu.off=placeColumns}.
     */
    static final String COLUMNS_SWITCH = "placeColumns";

    /**
     * The switch that makes the rotary embedding write new arrays instead of rotating dense query
     * and key heads in place ({@link #rotateInPlace}): {@code -Dllmzoo.cpu.off=rotateInPlace}.
     */
    static final String ROTATE_IN_PLACE_SWITCH = "rotateInPlace";

    /**
     * The switch that leaves a decode step's norms before its products to {@link #rmsNorm}'s own
     * array ({@code CpuKernels.normedProjectAll}, {@code normedGatedProject}): {@code
     * -Dllmzoo.cpu.off=normedProducts}.
     */
    static final String NORMED_PRODUCTS_SWITCH = "normedProducts";

    /**
     * The switch that rotates a decode step's query and key heads in two calls, each checking and
     * reading the rotary factors again ({@link #rotateInPlace}), instead of both in one ({@link
     * #rotatePairInPlace}): {@code -Dllmzoo.cpu.off=rotatePair}.
     */
    static final String ROTATE_PAIR_SWITCH = "rotatePair";

    /**
     * The switch that leaves a step's greedy pick to the engine's {@code argMax} and its copy out
     * ({@code Kernels.argMax}) instead of {@link #argMax}'s scan of the logits in place: {@code
     * -Dllmzoo.cpu.off=argMax}.
     */
    static final String ARG_MAX_SWITCH = "argMax";

    /** The largest input the kernels take: what a direct buffer's int offsets reach. */
    static final long MAX_ELEMENTS = Integer.MAX_VALUE / Float.BYTES;

    /**
     * Elements from which a kernel's work is split across the cores (a 128-position prefill's
     * norm has 98304): below it, a decode step's, a hand-over costs about what it saves.
     */
    static final long SPLIT_MIN_ELEMENTS = Long.getLong("llmzoo.decodeOps.splitMinElements", 1L << 15);

    /** The alignment of {@link #rmsNormed}'s buffer, in bytes. */
    private static final int CACHE_LINE = 64;

    /** Each calling thread's buffer for {@link #rmsNormed}, grown as needed. */
    private static final ThreadLocal<ByteBuffer> NORMED = new ThreadLocal<>();

    /** decode_ops.c's numbers for a norm. */
    private static final int RMS_NORM = 0;

    private static final int RMS_NORM_UNIT_OFFSET = 1;

    private static final int LAYER_NORM = 2;

    /** A kernel's call over units {@code [from, to)}. */
    @FunctionalInterface
    private interface Part {
        void run(int from, int to);
    }

    private DecodeOps() {}

    /**
     * Runs {@code part} over {@code units} units, split across the cores where the work has at
     * least {@link #SPLIT_MIN_ELEMENTS} elements and the workers are free, else on the caller.
     */
    private static void inParts(int units, long elements, Part part) {
        int parts = Math.min(CoreWorkers.PARALLELISM, units);
        if (parts > 1 && elements >= SPLIT_MIN_ELEMENTS && CoreWorkers.inRanges(units, parts, part::run)) {
            return;
        }
        part.run(0, units);
    }

    /** Bytes {@code [from * unit, to * unit)} of a buffer, as a buffer of its own. */
    private static ByteBuffer slice(ByteBuffer buffer, int from, int to, long unitFloats) {
        return buffer.slice(Math.toIntExact(from * unitFloats * Float.BYTES),
                Math.toIntExact((to - from) * unitFloats * Float.BYTES));
    }

    /**
     * Whether {@link #rmsNorm} takes these arrays: float32, dense, on the CPU, a weight as wide as
     * {@code x}'s last axis, no more than {@link #MAX_ELEMENTS}.
     *
     * @param x input (..., W)
     * @param weight the scale
     * @return whether the kernel computes the norm
     */
    static boolean takesRmsNorm(NDArray x, NDArray weight) {
        Shape shape = x.getShape();
        return NativeKernels.loaded()
                && shape.dimension() >= 1
                && shape.size() > 0
                && shape.size() <= MAX_ELEMENTS
                && weight.getShape().dimension() == 1
                && weight.getShape().get(0) == shape.get(shape.dimension() - 1)
                && NativeKernels.denseFloat32OnCpu(x)
                && NativeKernels.denseFloat32OnCpu(weight);
    }

    /**
     * {@code x * rsqrt(mean(x^2) + eps) * weight} (or {@code * (1 + weight)}) over the last axis.
     *
     * @param x input (..., W) that {@link #takesRmsNorm} accepts
     * @param weight (W)
     * @param eps the epsilon added to the mean square
     * @param unitOffset whether the scale is {@code 1 + weight}
     * @return (..., W), in {@code x}'s manager
     */
    static NDArray rmsNorm(NDArray x, NDArray weight, float eps, boolean unitOffset) {
        return norm(x, weight, null, eps, unitOffset ? RMS_NORM_UNIT_OFFSET : RMS_NORM);
    }

    /**
     * {@link #rmsNorm} into the calling thread's buffer instead of a new array, for a product that
     * reads its input from memory ({@code CpuKernels.normedProjectAll}, {@code normedGatedProject}):
     * at a decode step's few rows the output array's engine call costs several times the norm.
     * The buffer is overwritten by the thread's next call.
     *
     * @param x input (..., W) that {@link #takesRmsNorm} accepts, at most {@link
     *     CompressedProduct#MAX_ROWS} rows
     * @param weight (W)
     * @param eps the epsilon added to the mean square
     * @param unitOffset whether the scale is {@code 1 + weight}
     * @return the normed rows, dense float32 in {@code x}'s order
     */
    static ByteBuffer rmsNormed(NDArray x, NDArray weight, float eps, boolean unitOffset) {
        Shape shape = x.getShape();
        int width = Math.toIntExact(shape.get(shape.dimension() - 1));
        int rows = Math.toIntExact(shape.size() / width);
        int bytes = Math.multiplyExact(Math.toIntExact(shape.size()), Float.BYTES);
        ByteBuffer out = NORMED.get();
        if (out == null || out.capacity() < bytes) {
            // at a cache line's start, as the engine's arrays are: the float16 kernel reads x once per
            // 32 weights, and loads across two lines made its decode step 5 % slower
            out = ByteBuffer.allocateDirect(bytes + CACHE_LINE).alignedSlice(CACHE_LINE).order(ByteOrder.nativeOrder());
            NORMED.set(out);
        }
        out = out.slice(0, bytes).order(ByteOrder.nativeOrder());
        norm(NativeKernels.buffer(x), NativeKernels.buffer(weight), null, out, rows, width, eps,
                unitOffset ? RMS_NORM_UNIT_OFFSET : RMS_NORM);
        return out;
    }

    /**
     * Whether {@link #layerNorm} takes these arrays: float32, dense, on the CPU, a weight and a bias
     * as wide as {@code x}'s last axis, no more than {@link #MAX_ELEMENTS}.
     *
     * @param x input (..., W)
     * @param weight the scale
     * @param bias the shift
     * @return whether the kernel computes the norm
     */
    static boolean takesLayerNorm(NDArray x, NDArray weight, NDArray bias) {
        return takesRmsNorm(x, weight)
                && bias.getShape().equals(weight.getShape())
                && NativeKernels.denseFloat32OnCpu(bias);
    }

    /**
     * {@code (x - mean) / sqrt(var + eps) * weight + bias} over the last axis, {@code var} the
     * biased variance (as {@code torch.nn.functional.layer_norm}).
     *
     * @param x input (..., W) that {@link #takesLayerNorm} accepts
     * @param weight (W)
     * @param bias (W)
     * @param eps the epsilon added to the variance
     * @return (..., W), in {@code x}'s manager
     */
    static NDArray layerNorm(NDArray x, NDArray weight, NDArray bias, float eps) {
        return norm(x, weight, bias, eps, LAYER_NORM);
    }

    /** A norm ({@code kind}: decode_ops.c's number) of the rows of {@code x}, split across the cores. */
    private static NDArray norm(NDArray x, NDArray weight, NDArray bias, float eps, int kind) {
        Shape shape = x.getShape();
        int width = Math.toIntExact(shape.get(shape.dimension() - 1));
        NDArray out = x.getManager().create(shape, DataType.FLOAT32);
        ByteBuffer xb = NativeKernels.buffer(x);
        ByteBuffer wb = NativeKernels.buffer(weight);
        ByteBuffer bb = bias == null ? null : NativeKernels.buffer(bias);
        ByteBuffer ob = NativeKernels.buffer(out);
        inParts(Math.toIntExact(shape.size() / width), shape.size(), (from, to) ->
                norm(slice(xb, from, to, width), wb, bb, slice(ob, from, to, width), to - from, width, eps, kind));
        return out;
    }

    /**
     * Writes {@code part} (+ {@code bias}) into columns {@code [offset, offset + w)} of {@code out}:
     * one core's share of a product split by columns ({@link SplitProjection}), placed by that core
     * where a join on one core would otherwise copy every share after the last one is done. The
     * sum is the engine's single float addition, so the result equals the join's bit for bit.
     *
     * @param part the share (..., w), float32, dense, on the CPU
     * @param bias its bias (w), or {@code null}
     * @param out the whole product (..., W), float32, dense, with as many rows
     * @param offset the share's first column
     */
    static void intoColumns(NDArray part, NDArray bias, NDArray out, long offset) {
        Shape ps = part.getShape();
        Shape os = out.getShape();
        int width = Math.toIntExact(ps.get(ps.dimension() - 1));
        int outWidth = Math.toIntExact(os.get(os.dimension() - 1));
        intoColumns(NativeKernels.buffer(part), bias == null ? null : NativeKernels.buffer(bias),
                NativeKernels.buffer(out), Math.toIntExact(ps.size() / Math.max(width, 1)), width, outWidth,
                Math.toIntExact(offset));
    }

    /**
     * Whether {@link #rotate} takes these heads and factors: float32 on the CPU, heads (B, H, T, D)
     * of no more than {@link #MAX_ELEMENTS} held densely or as the transposed view of dense (B, T,
     * H, D) rows (a projection's), factors (B or 1, 1, T, D) held densely.
     *
     * @param x heads (B, H, T, D)
     * @param cosSin the factors of {@code RotaryEmbedding.cosSin}
     * @return whether the kernel rotates them
     */
    static boolean takesRotation(NDArray x, NDList cosSin) {
        Shape heads = x.getShape();
        if (!NativeKernels.loaded() || heads.dimension() != 4 || heads.size() == 0
                || heads.size() > MAX_ELEMENTS
                || heads.get(3) % 2 != 0) {
            return false;
        }
        for (NDArray factor : cosSin) {
            Shape f = factor.getShape();
            if (f.dimension() != 4
                    || (f.get(0) != 1 && f.get(0) != heads.get(0))
                    || f.get(1) != 1
                    || f.get(2) != heads.get(2)
                    || f.get(3) != heads.get(3)
                    || !NativeKernels.denseFloat32OnCpu(factor)) {
                return false;
            }
        }
        if (NativeKernels.denseFloat32OnCpu(x)) {
            return true;
        }
        try (NDArray rows = x.transpose(0, 2, 1, 3)) {
            return NativeKernels.denseFloat32OnCpu(rows);
        }
    }

    /**
     * {@code x * cos + rotate_half(x) * sin}, as {@code RotaryEmbedding.rotate} computes it.
     *
     * @param x heads (B, H, T, D) that {@link #takesRotation} accepts
     * @param cosSin {@code cat(cos, cos)} and {@code cat(-sin, sin)}, (B or 1, 1, T, D)
     * @return the rotated heads (B, H, T, D), in {@code x}'s manager
     */
    static NDArray rotate(NDArray x, NDList cosSin) {
        Shape heads = x.getShape();
        NDArray out = x.getManager().create(heads, DataType.FLOAT32);
        boolean positionsMajor = !NativeKernels.denseFloat32OnCpu(x);
        NDArray source = positionsMajor ? x.transpose(0, 2, 1, 3) : x; // (B, T, H, D) rows where a view
        ByteBuffer xb = NativeKernels.buffer(source);
        ByteBuffer cos = NativeKernels.buffer(cosSin.get(0));
        ByteBuffer sin = NativeKernels.buffer(cosSin.get(1));
        ByteBuffer ob = NativeKernels.buffer(out);
        int b = Math.toIntExact(heads.get(0));
        int h = Math.toIntExact(heads.get(1));
        int t = Math.toIntExact(heads.get(2));
        int d = Math.toIntExact(heads.get(3));
        boolean perSequence = cosSin.get(0).getShape().get(0) != 1;
        inParts(b * h, heads.size(), (from, to) ->
                rotate(xb, cos, sin, ob, b, h, t, d, perSequence, positionsMajor, from, to));
        if (source != x) {
            source.close();
        }
        return out;
    }

    /**
     * {@link #rotate} written over {@code x}, as a decode step takes it: no output array, whose
     * engine call costs several times the rotation of one position's heads (docs/PERFORMANCE.md,
     * "A Llama decode step's calls outside the products"). Each vector of both halves of a head is
     * read before either is written, so the result is {@link #rotate}'s bit for bit.
     *
     * @param x heads (B, H, T, D) that {@link #takesRotation} accepts, held densely; the result
     *     replaces them, and the caller must not read the unrotated heads afterwards
     * @param cosSin {@code cat(cos, cos)} and {@code cat(-sin, sin)}, (B or 1, 1, T, D)
     * @return {@code x}, holding the rotated heads
     */
    static NDArray rotateInPlace(NDArray x, NDList cosSin) {
        Shape heads = x.getShape();
        ByteBuffer xb = NativeKernels.buffer(x);
        ByteBuffer cos = NativeKernels.buffer(cosSin.get(0));
        ByteBuffer sin = NativeKernels.buffer(cosSin.get(1));
        int b = Math.toIntExact(heads.get(0));
        int h = Math.toIntExact(heads.get(1));
        int t = Math.toIntExact(heads.get(2));
        int d = Math.toIntExact(heads.get(3));
        boolean perSequence = cosSin.get(0).getShape().get(0) != 1;
        inParts(b * h, heads.size(), (from, to) -> rotate(xb, cos, sin, xb, b, h, t, d, perSequence, false, from, to));
        return x;
    }

    /**
     * {@link #rotateInPlace} of a decode step's query and key heads in one native call, the rotary
     * factors' checks and memory taken once a forward pass ({@link Factors}) rather than once a head
     * array and layer: the same arithmetic in the same order, so the result is two {@link
     * #rotateInPlace} calls' bit for bit.
     *
     * @param q query heads (B, Hq, T, D); the result replaces them
     * @param k key heads (B, Hk, T, D); the result replaces them
     * @param cosSin {@code cat(cos, cos)} and {@code cat(-sin, sin)}, (B or 1, 1, T, D)
     * @return {@code q} and {@code k} rotated, or {@code null} where the heads are not both dense
     *     float32 of one batch, position count and head width, the factors do not fit, or the heads are
     *     as many elements as a split across the cores is for ({@link #SPLIT_MIN_ELEMENTS}): the caller
     *     then rotates each
     */
    static NDArray[] rotatePairInPlace(NDArray q, NDArray k, NDList cosSin) {
        Shape qs = q.getShape();
        Shape ks = k.getShape();
        if (!NativeKernels.loaded() || cosSin.size() != 2 || qs.dimension() != 4 || ks.dimension() != 4
                || qs.get(0) != ks.get(0) || qs.get(2) != ks.get(2) || qs.get(3) != ks.get(3)
                || qs.get(3) % 2 != 0 || qs.size() + ks.size() >= SPLIT_MIN_ELEMENTS
                || !NativeKernels.denseFloat32OnCpu(q) || !NativeKernels.denseFloat32OnCpu(k)) {
            return null;
        }
        Factors factors = Factors.of(cosSin, qs);
        if (factors == null) {
            return null;
        }
        rotatePair(NativeKernels.buffer(q), NativeKernels.buffer(k), factors.cos(), factors.sin(),
                Math.toIntExact(qs.get(0)), Math.toIntExact(qs.get(1)), Math.toIntExact(ks.get(1)),
                Math.toIntExact(qs.get(2)), Math.toIntExact(qs.get(3)), factors.perSequence());
        return new NDArray[] {q, k};
    }

    /**
     * A forward pass's rotary factors, checked and with their memory taken once: every layer of a
     * decode step rotates by the same {@link NDList} ({@code RotaryEmbedding.cosSin} gathers it once a
     * pass), so the last one checked is kept, for any thread, and its arrays' release checked at each
     * use.
     */
    private record Factors(NDList list, NDArray cosArray, NDArray sinArray, Shape shape, ByteBuffer cos,
            ByteBuffer sin, boolean perSequence) {

        private static volatile Factors last;

        /** The factors of {@code cosSin} for heads of this shape, or {@code null} where they do not fit. */
        static Factors of(NDList cosSin, Shape heads) {
            Factors f = last;
            if (f == null || f.list != cosSin || f.cosArray != cosSin.get(0) || f.sinArray != cosSin.get(1)
                    || f.cosArray.isReleased() || f.sinArray.isReleased()) {
                f = null;
                NDArray cos = cosSin.get(0);
                NDArray sin = cosSin.get(1);
                if (fits(cos.getShape(), heads) && cos.getShape().equals(sin.getShape())
                        && NativeKernels.denseFloat32OnCpu(cos) && NativeKernels.denseFloat32OnCpu(sin)) {
                    f = new Factors(cosSin, cos, sin, cos.getShape(), NativeKernels.buffer(cos),
                            NativeKernels.buffer(sin), cos.getShape().get(0) != 1);
                    last = f;
                }
            }
            return f != null && fits(f.shape, heads) ? f : null;
        }

        /** Whether factors (B or 1, 1, T, D) fit heads (B, H, T, D). */
        private static boolean fits(Shape factor, Shape heads) {
            return factor.dimension() == 4 && (factor.get(0) == 1 || factor.get(0) == heads.get(0))
                    && factor.get(1) == 1 && factor.get(2) == heads.get(2) && factor.get(3) == heads.get(3);
        }
    }

    /**
     * Whether {@link #argMax} takes these logits: float32, dense, on the CPU, rows of at least one
     * element, no more than {@link #MAX_ELEMENTS}.
     *
     * @param logits (..., V)
     * @return whether the kernel picks
     */
    static boolean takesArgMax(NDArray logits) {
        Shape shape = logits.getShape();
        return NativeKernels.loaded() && shape.dimension() >= 1 && shape.get(shape.dimension() - 1) >= 1
                && shape.size() <= MAX_ELEMENTS && NativeKernels.denseFloat32OnCpu(logits);
    }

    /**
     * Each row's index of its largest logit, the first on ties, the first NaN where a row has one: the
     * engine's {@code argMax(-1)}, scanned in the logits' memory and written straight into the result.
     *
     * @param logits (..., V) that {@link #takesArgMax} accepts
     * @return each row's index, in row-major order of the leading axes
     */
    static long[] argMax(NDArray logits) {
        Shape shape = logits.getShape();
        int width = Math.toIntExact(shape.get(shape.dimension() - 1));
        int rows = Math.toIntExact(shape.size() / width);
        long[] picked = new long[rows];
        argMax(NativeKernels.buffer(logits), rows, width, picked);
        return picked;
    }

    /**
     * Whether {@link #activate} takes these arrays: float32, dense, on the CPU, of one shape, no
     * more than {@link #MAX_ELEMENTS}.
     *
     * @param gate the pre-activation
     * @param up the up projection, or {@code null}
     * @return whether the kernel computes the activation
     */
    static boolean takesActivation(NDArray gate, NDArray up) {
        return NativeKernels.loaded()
                && gate.size() > 0
                && gate.size() <= MAX_ELEMENTS
                && NativeKernels.denseFloat32OnCpu(gate)
                && (up == null || up.getShape().equals(gate.getShape()) && NativeKernels.denseFloat32OnCpu(up));
    }

    /**
     * {@code act(gate) * up}, or {@code act(gate)} without {@code up}, written over {@code gate}:
     * at a prefill's rows a fresh output array is one more stream through the caches (its lines
     * read in before they are written), about 1 % of a GPT-2 prefill (docs/PERFORMANCE.md).
     *
     * @param gate the pre-activation that {@link #takesActivation} accepts, which the result
     *     replaces; the caller must not read it afterwards
     * @param up the up projection, or {@code null}
     * @param activation the activation
     * @return {@code gate}, holding the result
     */
    static NDArray activateInPlace(NDArray gate, NDArray up, HiddenActivation activation) {
        ByteBuffer gb = NativeKernels.buffer(gate);
        ByteBuffer ub = up == null ? null : NativeKernels.buffer(up);
        long size = gate.size();
        int code = code(activation);
        int blocks = Math.toIntExact((size + 15) / 16); // split at whole vectors
        inParts(blocks, size, (from, to) -> {
            long first = 16L * from;
            long count = Math.min(size, 16L * to) - first;
            ByteBuffer part = gb.slice(Math.toIntExact(first * Float.BYTES), Math.toIntExact(count * Float.BYTES));
            activate(part,
                    ub == null ? null : ub.slice(Math.toIntExact(first * Float.BYTES), Math.toIntExact(count * Float.BYTES)),
                    part, count, code);
        });
        return gate;
    }

    /** decode_ops.c's number for an activation. */
    static int code(HiddenActivation activation) {
        return switch (activation) {
            case SILU -> 0;
            case GELU_TANH -> 1;
        };
    }

    private static native void norm(
            ByteBuffer x, ByteBuffer weight, ByteBuffer bias, ByteBuffer out, int rows, int width, float eps,
            int kind);

    private static native void intoColumns(
            ByteBuffer part, ByteBuffer bias, ByteBuffer out, int rows, int width, int outWidth, int offset);

    private static native void rotate(
            ByteBuffer x, ByteBuffer cos, ByteBuffer sin, ByteBuffer out, int batch, int heads, int positions,
            int headDim, boolean perSequence, boolean positionsMajor, int from, int to);

    private static native void rotatePair(
            ByteBuffer q, ByteBuffer k, ByteBuffer cos, ByteBuffer sin, int batch, int queryHeads, int keyHeads,
            int positions, int headDim, boolean perSequence);

    private static native void argMax(ByteBuffer logits, int rows, int width, long[] picked);

    private static native void activate(ByteBuffer gate, ByteBuffer up, ByteBuffer out, long size, int activation);
}
