package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
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
