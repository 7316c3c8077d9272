package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One float32 buffer, reused by every product of many rows (a prefill) with a {@link
 * CompressedWeight}: the weight is widened into it and the engine multiplies an array over its
 * memory (no copy), so a prefill allocates no float32 copy of each weight it multiplies. A fresh
 * array per product would be freed into glibc's heap, which keeps it (the launcher's mmap threshold
 * is 256 MiB) as holes between the step's activations: gigabytes of resident memory over a 1B
 * model's prefill.
 *
 * <p>The buffer grows to the largest weight multiplied, 64-byte aligned like PyTorch's own arrays
 * (oneMKL's products may depend on alignment), so a product is bit for bit the one over a fresh
 * widened array. The array over it is closed before the buffer is handed to the next product; a
 * caller that finds the buffer in use by another thread widens into a fresh array instead.
 *
 * <p>Where PyTorch computes on one thread (as {@code bin/llmzoo} runs it) a large weight's product
 * is split across the cores by output columns, as {@link SplitProjection} splits a float32
 * prefill: each core widens its own rows into the buffer and multiplies them, and the parts are
 * joined (the whole product to float32 rounding). The engine's product would otherwise use one
 * core.
 */
final class WideningBuffer {

    /** PyTorch's CPU allocator's alignment, in bytes. */
    private static final int ALIGNMENT = 64;

    private final ReentrantLock lock = new ReentrantLock();

    /** The widened weight's memory, {@code null} until the first product. */
    private ByteBuffer memory;

    /**
     * {@code x @ weight^T + bias} by the engine over the weight widened to float32.
     *
     * @param x input (..., in); the result is attached to its manager
     * @param weight a weight {@link CompressedProduct#widens} accepts
     * @param bias (out), or {@code null}
     * @return (..., out)
     */
    NDArray product(NDArray x, CompressedWeight weight, NDArray bias) {
        if (!lock.tryLock()) { // another thread's prefill holds the buffer
            NDArray w = CompressedProduct.widened(weight, x.getManager()); // (out, in)
            try {
                return EngineKernels.product(x, w, bias, Layout.OUT_IN);
            } finally {
                w.close();
            }
        }
        try {
            Shape shape = new Shape(weight.outFeatures(), weight.inFeatures());
            ByteBuffer into = reserve(Math.multiplyExact(shape.size(), (long) Float.BYTES));
            if (splits(x, weight)) {
                NDArray split = splitProduct(x, weight, bias, into);
                if (split != null) {
                    return split;
                }
            }
            CompressedProduct.widen(weight, into);
            NDArray w = x.getManager().create(into, shape, DataType.FLOAT32); // (out, in) over the buffer
            try {
                return EngineKernels.product(x, w, bias, Layout.OUT_IN);
            } finally {
                w.close();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Whether the product is split across the cores by output columns: PyTorch computes on one
     * thread (as {@code bin/llmzoo} runs it), so the engine's product would use one core, and the
     * weight is worth a hand-over; as {@link SplitProjection} splits a float32 prefill.
     */
    private static boolean splits(NDArray x, CompressedWeight weight) {
        return CoreWorkers.PARALLELISM > 1
                && (long) weight.outFeatures() * weight.inFeatures() >= SplitProjection.MIN_ELEMENTS
                && TorchThreads.intraOp() == 1;
    }

    /**
     * The product with each core widening its own rows of the weight into the buffer and
     * multiplying them (no wait between the widening and the product), the parts joined; {@code
     * null} where the workers are busy with another caller.
     */
    private static NDArray splitProduct(NDArray x, CompressedWeight weight, NDArray bias, ByteBuffer into) {
        int out = weight.outFeatures();
        int in = weight.inFeatures();
        int parts = CoreWorkers.PARALLELISM;
        long[] bounds = CoreWorkers.bounds(out, parts);
        NDArray[] products = CoreWorkers.run(parts, i -> {
            int from = i == 0 ? 0 : (int) bounds[i - 1];
            int to = i == parts - 1 ? out : (int) bounds[i];
            CompressedProduct.widen(weight, into, from, to);
            // rows [from, to) of the widened weight; each row starts 64-byte aligned (in is whole groups of 32)
            ByteBuffer rows = into.duplicate()
                    .position(Math.multiplyExact(from, in) * Float.BYTES)
                    .limit(Math.multiplyExact(to, in) * Float.BYTES)
                    .slice()
                    .order(ByteOrder.nativeOrder());
            NDArray w = x.getManager().create(rows, new Shape(to - from, in), DataType.FLOAT32); // (out_i, in)
            try {
                return EngineKernels.product(x, w, null, Layout.OUT_IN); // (..., out_i)
            } finally {
                w.close();
            }
        });
        if (products == null) {
            return null;
        }
        NDArray joined = NDArrays.concat(new NDList(products), -1); // (..., out)
        for (NDArray part : products) {
            part.close();
        }
        return bias == null ? joined : joined.addi(bias);
    }

    /**
     * Runs {@code task} holding the buffer, as another thread's product does (so a test can find it
     * in use).
     *
     * @param task what to run
     */
    void holding(Runnable task) {
        lock.lock();
        try {
            task.run();
        } finally {
            lock.unlock();
        }
    }

    /** @return the bytes the buffer holds (0 before the first product) */
    long capacity() {
        return memory == null ? 0 : memory.capacity();
    }

    /**
     * The buffer's first {@code bytes}, grown to them where it is smaller (the smaller one is freed by
     * the collector, a few tens of MB once per model); the caller holds the lock.
     */
    private ByteBuffer reserve(long bytes) {
        if (memory == null || memory.capacity() < bytes) {
            memory = ByteBuffer.allocateDirect(Math.toIntExact(bytes + ALIGNMENT - 1))
                    .alignedSlice(ALIGNMENT)
                    .order(ByteOrder.nativeOrder());
        }
        return memory.duplicate().limit(Math.toIntExact(bytes)).slice().order(ByteOrder.nativeOrder());
    }
}
