package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The product of 1 to {@link #MAX_ROWS} rows (a decode step) with a {@link CompressedWeight} by a
 * native kernel ({@code cpu-kernels/src/main/native/compressed_product.c}) that reads each
 * weight code once for all rows and widens it to float32 in registers, so a decode step reads a half
 * (int4), three quarters (int6), 1 (int8) or 2 (bfloat16, float16) bytes per weight instead of float32's 4. Each core fills its own
 * columns of one output.
 *
 * <p>It is used where {@link NativeKernels} are loaded, for inference on float32 CPU inputs with an
 * input width that is a multiple of {@link CompressedWeight#GROUP}; a prefill takes the engine's
 * product of the weight widened to float32 by {@link #widen} into one reused buffer ({@link
 * WideningBuffer}), and other widths or CPUs without native kernels the reference's.
 *
 * <p>Where the CPU has an int8 dot product (AVX512_VNNI; always in the AVX2 and NEON variants), checked
 * once when this class loads, the decode product multiplies int8 codes themselves instead of widening
 * them, by the input quantized per group of 32 to int8 (llama.cpp's Q8_0 dot product). int4 codes
 * (llama.cpp's Q4_0 blocks) take the int8 kernels, each group's 16 packed bytes unpacked to 32 int8
 * codes in [-8, 7] just before its dot product or widening (llama.cpp's Q4_0 x Q8_0 dot product), so
 * a decode step reads half a byte per weight plus its scale; int6 codes (24 bytes a group) take them the
 * same way, unpacked to codes in [-32, 31] (docs/cpu-kernels.md, "int6"); q4_k's super-blocks take kernels of their
 * own ({@link KQuantProduct}). bfloat16 codes
 * take the widening kernel (a 16-bit shift, exact); only a test multiplies those of 1 or 2 rows by the
 * input split into two bfloat16 halves with AVX512_BF16 ({@link #useDotProducts}): on AMD Zen 4 that
 * kernel's chain of two {@code vdpbf16ps} per 32 weights made a decode step's products 10-17 % slower
 * than widening, which is also the more accurate (docs/PERFORMANCE.md, "bfloat16's decode product by
 * widening"). {@code -Dllmzoo.cpu.off=compressedProduct.dot} keeps the widening kernel for int8 too, as
 * other CPUs have it. With AVX512_VNNI an int8 or int4 product sums each group
 * of 32 in two lanes of one register (the weight transposed in registers a block of 256 inputs at a
 * time) before its float32 step, rather than in 8 lanes per dot product; {@code
 * -Dllmzoo.cpu.off=compressedProduct.vnniBlocks} keeps the per-chunk kernel.
 */
final class CompressedProduct {

    /** The switch that turns the kernel off: {@code -Dllmzoo.cpu.off=compressedProduct}. */
    static final String SWITCH = "compressedProduct";

    /** The switch that keeps the widening kernel on CPUs with the dot-product instructions. */
    static final String DOT_SWITCH = "compressedProduct.dot";

    /** The most rows the kernel multiplies in one pass over the weight. */
    static final int MAX_ROWS = 8;

    /** {@link #features} bit: AVX512_VNNI (with AVX512BW), for int8 weights. */
    static final int VNNI = 1;

    /** {@link #features} bit: AVX512_BF16 (with AVX512BW), for bfloat16 weights. */
    static final int BF16 = 2;

    /**
     * Dot-product bit (with {@link #VNNI}): int8 and int4 products by the kernel that sums each
     * group in two lanes before the float32 step.
     */
    static final int VNNI_BLOCKS = 4;

    /** The switch that keeps int8 and int4 products on the per-chunk VNNI kernel. */
    static final String VNNI_BLOCKS_SWITCH = "compressedProduct.vnniBlocks";

    /**
     * The switch that makes every core's call of an int8 or int4 product quantize the input again
     * instead of reading the form {@link #prepare} made once for the hand-over (and so keeps each
     * core to one fixed share of the columns): {@code -Dllmzoo.cpu.off=compressedProduct.prepared}.
     */
    static final String PREPARED_SWITCH = "compressedProduct.prepared";

    /** Each calling thread's buffer for a hand-over's prepared input, grown as needed. */
    private static final ThreadLocal<ByteBuffer> FORM = new ThreadLocal<>();

    /** Inputs prepared so far ({@link #prepare}), for tests that check which path a product took. */
    private static final AtomicLong PREPARED_FORMS = new AtomicLong();

    /** The dot-product instructions the products use: those the CPU has, unless switched off. */
    private static volatile int dotProducts = initialDotProducts();

    private CompressedProduct() {}

    /**
     * Whether the kernel computes the product of {@code x} and {@code weight} plus {@code bias}
     * (inference is the caller's to check).
     *
     * @param x input (..., in)
     * @param weight the compressed weight
     * @param bias (out), or {@code null}
     * @param rows the rows of {@code x}
     * @return whether {@link #multiply} may be called with these arrays
     */
    static boolean applies(NDArray x, CompressedWeight weight, NDArray bias, long rows) {
        return NativeKernels.loaded() && rows >= 1 && rows <= MAX_ROWS && readable(x, weight, bias);
    }

    /**
     * Whether a native kernel can read the arrays of {@code x @ weight^T + bias}: the input width is
     * the weight's, in whole groups of {@link CompressedWeight#GROUP}, the bias (out), and the input
     * and bias dense float32 on the CPU.
     *
     * @param x input (..., in)
     * @param weight the compressed weight
     * @param bias (out), or {@code null}
     * @return whether the kernels may read them in place
     */
    static boolean readable(NDArray x, CompressedWeight weight, NDArray bias) {
        Shape in = x.getShape();
        return weight.inFeatures() % CompressedWeight.GROUP == 0
                && in.get(in.dimension() - 1) == weight.inFeatures()
                && (bias == null
                        || bias.getShape().dimension() == 1 && bias.getShape().get(0) == weight.outFeatures())
                && NativeKernels.denseFloat32OnCpu(x)
                && (bias == null || NativeKernels.denseFloat32OnCpu(bias));
    }

    /**
     * {@code x @ weight^T + bias} for arrays {@link #applies} accepts.
     *
     * @param x input (..., in); the result is attached to its manager
     * @param weight the compressed weight (out, in)
     * @param bias (out), or {@code null}
     * @param rows the rows of {@code x}
     * @return (..., out)
     */
    static NDArray multiply(NDArray x, CompressedWeight weight, NDArray bias, long rows) {
        return multiply(x, weight, bias, rows, dotProducts);
    }

    /**
     * {@link #multiply(NDArray, CompressedWeight, NDArray, long)}, with the input prepared once for
     * all the cores' calls where {@code prepared} allows ({@link #prepare}).
     *
     * @param x input (..., in)
     * @param weight the compressed weight (out, in)
     * @param bias (out), or {@code null}
     * @param rows the rows of {@code x}
     * @param prepared whether the input may be prepared once for all the cores' calls
     * @return (..., out)
     */
    static NDArray multiply(NDArray x, CompressedWeight weight, NDArray bias, long rows, boolean prepared) {
        return multiplyAll(x, NativeKernels.buffer(x), new CompressedWeight[] {weight}, new NDArray[] {bias}, null,
                rows, dotProducts, prepared)[0];
    }

    /**
     * {@link #multiplyAll(NDArray, CompressedWeight[], NDArray[], long, int)} with the dot-product
     * instructions chosen for this CPU.
     *
     * @param x input (..., in) that {@link #applies} accepts with each weight and bias
     * @param weights compressed weights (out_i, in)
     * @param biases their biases (out_i), or {@code null}s
     * @param rows the rows of {@code x}
     * @param prepared whether the input may be prepared once for all the calls ({@link #prepare})
     * @return the products (..., out_i)
     */
    static NDArray[] multiplyAll(
            NDArray x, CompressedWeight[] weights, NDArray[] biases, long rows, boolean prepared) {
        return multiplyAll(x, NativeKernels.buffer(x), weights, biases, null, rows, dotProducts, prepared);
    }

    /**
     * The dot-product bits the CPU and the switches allow: the int8 one ({@link #VNNI}: AVX512_VNNI,
     * AVX2's or NEON's) unless {@code -Dllmzoo.cpu.off} lists {@link #DOT_SWITCH}, with {@link
     * #VNNI_BLOCKS} unless it lists {@link #VNNI_BLOCKS_SWITCH}; never {@link #BF16}, which only a test
     * asks for ({@link #useDotProducts}).
     */
    static int initialDotProducts() {
        if (!NativeKernels.enabled(DOT_SWITCH)) {
            return 0;
        }
        int bits = features() & ~BF16;
        boolean blocks = (bits & VNNI) != 0 && KernelSwitches.on(VNNI_BLOCKS_SWITCH);
        return blocks ? bits | VNNI_BLOCKS : bits;
    }

    /** @return the {@link #VNNI}, {@link #BF16} and {@link #VNNI_BLOCKS} bits the products use */
    static int dotProducts() {
        return dotProducts;
    }

    /**
     * Sets the dot-product instructions every later product uses, so a test can run a whole model
     * through either kernel (bits the CPU lacks are ignored by the kernel).
     *
     * @param bits {@link #VNNI} and {@link #BF16} bits; 0 for the widening kernel
     */
    static void useDotProducts(int bits) {
        dotProducts = bits;
    }

    /**
     * {@link #multiply(NDArray, CompressedWeight, NDArray, long)} with the dot-product instructions
     * given rather than chosen, so a test can run either kernel.
     *
     * @param x input (..., in)
     * @param weight the compressed weight (out, in)
     * @param bias (out), or {@code null}
     * @param rows the rows of {@code x}
     * @param dotProducts {@link #VNNI} and {@link #BF16} bits, at most those {@link #features} reports
     * @return (..., out)
     */
    static NDArray multiply(NDArray x, CompressedWeight weight, NDArray bias, long rows, int dotProducts) {
        return multiplyAll(x, new CompressedWeight[] {weight}, new NDArray[] {bias}, rows, dotProducts)[0];
    }

    /**
     * The products of one input with several weights (a layer's key and value, gate and up) at
     * once: each core fills its own columns of every output, so they take one hand-over to the
     * other cores instead of one each. Each output is made in its final shape, and each product is
     * exactly {@link #multiply}'s.
     *
     * @param x input (..., in) that {@link #applies} accepts with each weight and bias
     * @param weights compressed weights (out_i, in)
     * @param biases their biases (out_i), or {@code null}s
     * @param rows the rows of {@code x}
     * @param dotProducts {@link #VNNI} and {@link #BF16} bits, at most those {@link #features} reports
     * @return the products (..., out_i) in the order of the weights
     */
    static NDArray[] multiplyAll(
            NDArray x, CompressedWeight[] weights, NDArray[] biases, long rows, int dotProducts) {
        return multiplyAll(x, NativeKernels.buffer(x), weights, biases, null, rows, dotProducts, false);
    }

    /**
     * {@link #multiplyAll(NDArray, CompressedWeight[], NDArray[], long, int)} of the rows in {@code
     * xs} instead of {@code x}'s own (its normed rows, {@link DecodeOps#rmsNormed}).
     *
     * @param x input (..., in) that {@link #applies} accepts with each weight and bias: the shape
     *     and manager of the results
     * @param xs the rows to multiply, dense float32 of {@code x}'s shape
     * @param weights compressed weights (out_i, in)
     * @param biases their biases (out_i), or {@code null}s
     * @param shapes each product's shape, of the elements of (..., out_i) in their order (a decode
     *     step's heads), or {@code null} for (..., out_i)
     * @param rows the rows of {@code x}
     * @param dotProducts {@link #VNNI} and {@link #BF16} bits, at most those {@link #features} reports
     * @param prepared whether the input may be prepared once for all the calls ({@link #prepare})
     * @return the products in the order of the weights
     */
    static NDArray[] multiplyAll(
            NDArray x, ByteBuffer xs, CompressedWeight[] weights, NDArray[] biases, Shape[] shapes, long rows,
            int dotProducts, boolean prepared) {
        Shape shape = x.getShape();
        Shape lead = shape.slice(0, shape.dimension() - 1);
        int n = Math.toIntExact(rows);
        int count = weights.length;
        NDArray[] outs = new NDArray[count];
        ByteBuffer[] os = new ByteBuffer[count];
        ByteBuffer[] bs = new ByteBuffer[count];
        long elements = 0;
        for (int i = 0; i < count; i++) {
            Shape product = shapes == null ? lead.add(weights[i].outFeatures()) : shapes[i]; // (..., out_i)
            outs[i] = x.getManager().create(product, DataType.FLOAT32);
            os[i] = NativeKernels.buffer(outs[i]);
            bs[i] = biases[i] == null ? null : NativeKernels.buffer(biases[i]);
            elements += (long) weights[i].outFeatures() * weights[i].inFeatures();
        }
        ByteBuffer form = prepared ? prepare(xs, weights, n, dotProducts) : null;
        boolean pooled = true;
        for (CompressedWeight weight : weights) {
            pooled &= poolsRuns(weight, rows, form != null);
        }
        CoreWorkers.share(elements, pooled, (first, last, runs) -> {
            for (int i = 0; i < count; i++) {
                columns(xs, form, weights[i], bs[i], os[i], n, first, last, runs, dotProducts);
            }
        });
        return outs;
    }

    /**
     * The rows of x prepared once for the products of a hand-over (quantized to int8 per group of
     * 32 in the form the dot-product kernel reads), so each core's calls read that form instead of
     * quantizing x again: the same values each call makes, so the products are bit for bit those of
     * {@link #columns} without it. {@code null} where the weights are not all int8, all int4 or all
     * q4_k of one input width, or the CPU's kernel for them has no prepared form (the widening
     * kernel, the per-chunk VNNI kernel). The form is the calling thread's buffer, rewritten by its
     * next hand-over.
     *
     * @param xs the rows, dense float32 (rows, in)
     * @param weights the weights the rows multiply
     * @param rows the rows
     * @param dotProducts the dot-product bits the products use
     * @return the prepared form, or {@code null}
     */
    static ByteBuffer prepare(ByteBuffer xs, CompressedWeight[] weights, int rows, int dotProducts) {
        WeightFormat format = weights[0].format();
        int in = weights[0].inFeatures();
        for (CompressedWeight weight : weights) {
            if (weight.format() != format || weight.inFeatures() != in) {
                return null;
            }
        }
        boolean kQuant = format == WeightFormat.Q4_K; // its own kernels: KQuantProduct
        int bytes = kQuant ? KQuantProduct.preparedBytes(rows, in)
                : format.isGrouped() ? preparedBytes(format(format), rows, in, dotProducts) : 0;
        if (bytes == 0) {
            return null;
        }
        ByteBuffer form = FORM.get();
        if (form == null || form.capacity() < bytes) {
            form = ByteBuffer.allocateDirect(bytes);
            FORM.set(form);
        }
        if (kQuant) {
            KQuantProduct.prepare(xs, form, rows, in);
        } else {
            prepare(xs, form, format(format), rows, in, dotProducts);
        }
        PREPARED_FORMS.incrementAndGet();
        return form;
    }

    /** @return how many inputs {@link #prepare} has prepared in this process */
    static long preparedForms() {
        return PREPARED_FORMS.get();
    }

    /**
     * Whether {@link CoreWorkers#share} may cut this weight's product into small runs for
     * whichever core is free: one row of a 16-bit weight, whose calls prepare next to nothing; the
     * int8 kernel quantizes the input again for each call (0.4 us at one row, 1.3 us at eight, a
     * 2048 x 768 weight), and more rows cost more to prepare than the balancing saves.
     *
     * @param weight the compressed weight
     * @param rows the rows of the input
     * @return whether its product's last runs may go to whichever core is free
     */
    static boolean poolsRuns(CompressedWeight weight, long rows, boolean prepared) {
        return rows == 1 && (prepared || !weight.format().isGrouped() && weight.format() != WeightFormat.Q4_K);
    }

    /**
     * The runs {@code [first, last)} of {@code runs} nearly equal runs of the weight's output
     * columns, of x's rows in {@code xs} or, where not {@code null}, in the form {@link #prepare}
     * made of them for this weight.
     */
    static void columns(
            ByteBuffer xs, ByteBuffer form, CompressedWeight weight, ByteBuffer bs, ByteBuffer os, int rows, int first,
            int last, int runs, int dotProducts) {
        int columns = weight.outFeatures();
        if (weight.format() == WeightFormat.Q4_K) { // its own kernels: KQuantProduct
            int from = CoreWorkers.start(columns, first, runs);
            int to = CoreWorkers.start(columns, last, runs);
            if (form != null) {
                KQuantProduct.multiplyPrepared(form, weight, bs, os, rows, from, to);
            } else {
                KQuantProduct.multiply(xs, weight, bs, os, rows, from, to);
            }
            return;
        }
        ByteBuffer[] held = weight.directBuffers();
        if (form != null) {
            multiplyPrepared(form, held[0], held[1], bs, os, format(weight.format()), rows, weight.inFeatures(),
                    columns, CoreWorkers.start(columns, first, runs), CoreWorkers.start(columns, last, runs));
            return;
        }
        multiply(xs, held[0], held[1], bs, os, format(weight.format()), rows, weight.inFeatures(), columns,
                CoreWorkers.start(columns, first, runs), CoreWorkers.start(columns, last, runs), dotProducts);
    }

    /**
     * Whether {@link #widened} can widen the weight: the library is loaded and {@code in} is whole
     * groups.
     *
     * @param weight the compressed weight
     * @return whether the native widening applies
     */
    static boolean widens(CompressedWeight weight) {
        return NativeKernels.loaded() && weight.inFeatures() % CompressedWeight.GROUP == 0;
    }

    /**
     * The weight widened to float32 by the native kernel (each core its own rows), for a product of
     * many rows (a prefill) by the engine; exactly {@link CompressedWeight#toFloatArray}'s values.
     *
     * @param weight a weight {@link #widens} accepts
     * @param manager the manager of the result; the caller closes it after the product
     * @return (out, in) float32
     */
    static NDArray widened(CompressedWeight weight, NDManager manager) {
        NDArray out = manager.create(new Shape(weight.outFeatures(), weight.inFeatures()), DataType.FLOAT32);
        widen(weight, NativeKernels.buffer(out));
        return out;
    }

    /**
     * Widens the weight to float32 into {@code out} (each core its own rows): the values {@link
     * #widened} holds, in row-major order from the buffer's first byte.
     *
     * @param weight a weight {@link #widens} accepts
     * @param out a direct buffer of at least {@code out * in} floats in native order
     */
    static void widen(CompressedWeight weight, ByteBuffer out) {
        int rows = weight.outFeatures();
        if (weight.format() == WeightFormat.Q4_K) {
            if (!CoreWorkers.inRanges(rows, CoreWorkers.PARALLELISM, (from, to) -> KQuantProduct.widen(weight, out, from, to))) {
                KQuantProduct.widen(weight, out, 0, rows);
            }
            return;
        }
        ByteBuffer[] held = weight.directBuffers();
        int format = format(weight.format());
        boolean done = CoreWorkers.inRanges(rows, CoreWorkers.PARALLELISM, (from, to) ->
                widen(held[0], held[1], out, format, weight.inFeatures(), from, to));
        if (!done) { // the workers busy with another caller
            widen(held[0], held[1], out, format, weight.inFeatures(), 0, rows);
        }
    }

    /**
     * Widens rows {@code [from, to)} of the weight to float32 on the calling thread, into the same
     * places of {@code out} as {@link #widen(CompressedWeight, ByteBuffer)} puts them.
     *
     * @param weight a weight {@link #widens} accepts
     * @param out a direct buffer of at least {@code to * in} floats in native order
     * @param from the first row
     * @param to the row after the last
     */
    static void widen(CompressedWeight weight, ByteBuffer out, int from, int to) {
        if (weight.format() == WeightFormat.Q4_K) {
            KQuantProduct.widen(weight, out, from, to);
            return;
        }
        ByteBuffer[] held = weight.directBuffers();
        widen(held[0], held[1], out, format(weight.format()), weight.inFeatures(), from, to);
    }

    /** The kernels' number for a format (compressed_product.c's and compressed_gemm.c's enum). */
    static int format(WeightFormat format) {
        switch (format) {
            case BFLOAT16:
                return 0;
            case FLOAT16:
                return 1;
            case INT8:
                return 2;
            case INT4:
                return 3;
            case INT6:
                return 4;
            default:
                throw new IllegalArgumentException(format + " is not a compressed format");
        }
    }

    /**
     * @return the dot-product instructions of this CPU: {@link #VNNI} and {@link #BF16} bits
     */
    static native int features();

    private static native void widen(
            ByteBuffer codes, ByteBuffer scales, ByteBuffer out, int format, int in, int from, int to);

    private static native void multiply(
            ByteBuffer x, ByteBuffer codes, ByteBuffer scales, ByteBuffer bias, ByteBuffer out, int format,
            int rows, int in, int outFeatures, int from, int to, int dotProducts);

    /** @return bytes of the prepared form of {@code rows} rows of {@code in} inputs, 0 where there is none */
    private static native int preparedBytes(int format, int rows, int in, int dotProducts);

    private static native void prepare(ByteBuffer x, ByteBuffer form, int format, int rows, int in, int dotProducts);

    private static native void multiplyPrepared(
            ByteBuffer form, ByteBuffer codes, ByteBuffer scales, ByteBuffer bias, ByteBuffer out, int format,
            int rows, int in, int outFeatures, int from, int to);
}
