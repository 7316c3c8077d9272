package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import java.nio.ByteBuffer;

/**
 * The product of many rows (a prefill) with a {@link CompressedWeight} by a native kernel ({@code
 * cpu-kernels/src/main/native/compressed_gemm.c}), compute-bound like a GEMM, instead of widening the
 * whole weight to float32 for the engine's: int8 codes by the input quantized per group of 32 to int8
 * with the CPU's int8 dot product (llama.cpp's Q8_0 product), int4 and int6 codes unpacked to int8 a panel
 * at a time and multiplied the same way (llama.cpp's Q4_0 product); bfloat16 and float16 codes widened to float32 a panel
 * at a time and multiplied by FMA (the float32 product of the widened weight, as the
 * reference's). Each core repacks its own columns of the weight a panel at a time and passes every
 * row over the panel while it stays in its L2. q4_k weights take {@link KQuantProduct}'s kernel in the
 * same way (tiles of 8 rows passed over panels of the packed weight, never widened).
 *
 * <p>It takes int8, int4 and int6 weights where the CPU has an int8 dot product ({@link CompressedProduct#VNNI})
 * and 16-bit and q4_k ones wherever the kernels are
 * loaded; the rest keep {@link WideningBuffer}'s widened product, as does every product
 * with {@code -Dllmzoo.cpu.off=compressedGemm}.
 */
final class CompressedGemm {

    /** The switch that turns the kernel off: {@code -Dllmzoo.cpu.off=compressedGemm}. */
    static final String SWITCH = "compressedGemm";

    /** Output columns are split between the cores at multiples of this (the kernel's column block). */
    static final int COLUMN_BLOCK = 16;

    /** The dot-product instructions of this CPU ({@link CompressedProduct#features}' bits). */
    private static final int FEATURES = NativeKernels.loaded() ? CompressedProduct.features() : 0;

    private CompressedGemm() {}

    /**
     * Whether the kernel computes the product of {@code x} and {@code weight} plus {@code bias}
     * (inference on the CPU and the switch are the caller's to check).
     *
     * @param x input (..., in)
     * @param weight the compressed weight
     * @param bias (out), or {@code null}
     * @return whether {@link #multiply} may be called with these arrays
     */
    static boolean applies(NDArray x, CompressedWeight weight, NDArray bias) {
        return takes(weight.format()) && CompressedProduct.readable(x, weight, bias);
    }

    /**
     * Whether the kernel takes a format's weights on this CPU: where it has the instruction the
     * kernel multiplies the codes with.
     *
     * @param format the weight's format
     * @return whether the kernel takes weights of that format here
     */
    static boolean takes(WeightFormat format) {
        return format == WeightFormat.Q4_K && NativeKernels.loaded() || format.isGrouped() && (FEATURES & CompressedProduct.VNNI) != 0
                || (format == WeightFormat.BFLOAT16 || format == WeightFormat.FLOAT16) && NativeKernels.loaded();
    }

    /**
     * {@code x @ weight^T + bias} for arrays {@link #applies} accepts, each core filling its own
     * columns of the output.
     *
     * @param x input (..., in); the result is attached to its manager
     * @param weight the compressed weight (out, in)
     * @param bias (out), or {@code null}
     * @param rows the rows of {@code x}
     * @return (..., out)
     */
    static NDArray multiply(NDArray x, CompressedWeight weight, NDArray bias, long rows) {
        Shape shape = x.getShape();
        NDArray out = x.getManager().create(
                shape.slice(0, shape.dimension() - 1).add(weight.outFeatures()), DataType.FLOAT32); // (..., out)
        ByteBuffer xs = NativeKernels.buffer(x);
        ByteBuffer bs = bias == null ? null : NativeKernels.buffer(bias);
        ByteBuffer os = NativeKernels.buffer(out);
        int n = Math.toIntExact(rows);
        int columns = weight.outFeatures();
        int blocks = (columns + COLUMN_BLOCK - 1) / COLUMN_BLOCK;
        int parts = Math.min(CoreWorkers.PARALLELISM, blocks);
        long[] bounds = CoreWorkers.bounds(blocks, parts);
        NDArray[] done = parts < 2
                ? null
                : CoreWorkers.run(parts, i -> {
                    int from = i == 0 ? 0 : (int) bounds[i - 1] * COLUMN_BLOCK;
                    int to = i == parts - 1 ? columns : (int) bounds[i] * COLUMN_BLOCK;
                    multiply(xs, weight, bs, os, n, from, to);
                    return out;
                });
        if (done == null) { // one core, one block, or the workers busy with another caller
            multiply(xs, weight, bs, os, n, 0, columns);
        }
        return out;
    }

    /** Columns [from, to) of {@code out = x @ weight^T + bias} by the weight format's kernel. */
    private static void multiply(
            ByteBuffer xs, CompressedWeight weight, ByteBuffer bs, ByteBuffer os, int rows, int from, int to) {
        if (weight.format() == WeightFormat.Q4_K) {
            KQuantProduct.multiply(xs, weight, bs, os, rows, from, to);
            return;
        }
        ByteBuffer[] held = weight.directBuffers();
        int format = CompressedProduct.format(weight.format()); // compressed_gemm.c numbers them alike
        multiply(xs, held[0], held[1], bs, os, format, rows, weight.inFeatures(), weight.outFeatures(), from, to);
    }

    /** Columns [from, to) of {@code out = x @ weight^T + bias}; {@code from} a multiple of 16. */
    private static native void multiply(
            ByteBuffer x, ByteBuffer codes, ByteBuffer scales, ByteBuffer bias, ByteBuffer out, int format,
            int rows, int in, int outFeatures, int from, int to);
}
