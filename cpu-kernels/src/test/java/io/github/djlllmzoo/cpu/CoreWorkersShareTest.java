package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.WeightFormat;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link CoreWorkers#share}: every item once, and products identical to the unsplit ones. */
class CoreWorkersShareTest extends CompressedWeightsTest {

    /** Weight elements past which a computation is split across the cores. */
    private static final long SPLIT = SplitProjection.MIN_ELEMENTS;

    @ParameterizedTest
    @CsvSource({"1, true", "7, true", "31, true", "1000, true", "32000, true", "1, false", "1000, false"})
    void everyItemIsComputedExactlyOnce(int items, boolean pooled) {
        AtomicIntegerArray computed = new AtomicIntegerArray(items);
        CoreWorkers.share(SPLIT, pooled, (first, last, runs) -> {
            for (int i = CoreWorkers.start(items, first, runs); i < CoreWorkers.start(items, last, runs); i++) {
                computed.incrementAndGet(i);
            }
        });
        for (int i = 0; i < items; i++) {
            assertEquals(1, computed.get(i), "item " + i);
        }
    }

    /**
     * Workers held up inside what they took (as ones whose virtual CPU the host took away) until
     * everything else is computed, or 10 s: the caller takes every run of the pool, and the product
     * is still the one computed in one call, bit for bit.
     */
    @ParameterizedTest
    @CsvSource({"INT8, 1", "INT8, 8", "BFLOAT16, 1", "FLOAT16, 3"})
    void aLateWorkerLeavesThePoolToTheCallerAndTheProductUnchanged(WeightFormat format, int rows) {
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: nothing is shared");
        int out = 1000; // not a multiple of the runs: stretches of uneven width
        int in = 768;
        CompressedWeight weight = compressed(out, in, format);
        NDArray x = manager.randomNormal(new Shape(rows, 1, in));
        NDArray whole = manager.zeros(new Shape(rows, 1, out), DataType.FLOAT32);
        NDArray shared = manager.zeros(new Shape(rows, 1, out), DataType.FLOAT32);
        ByteBuffer xs = NativeKernels.buffer(x);
        int dotProducts = CompressedProduct.dotProducts();
        CompressedProduct.columns(xs, null, weight, null, NativeKernels.buffer(whole), rows, 0, 1, 1, dotProducts);
        Thread caller = Thread.currentThread();
        AtomicInteger callerRuns = new AtomicInteger();
        AtomicInteger allRuns = new AtomicInteger();
        AtomicInteger doneRuns = new AtomicInteger();
        int heldBack = CoreWorkers.BLOCK_RUNS * (CoreWorkers.PARALLELISM - 1); // at most a block a worker
        ByteBuffer os = NativeKernels.buffer(shared);
        CoreWorkers.share((long) out * in + SPLIT, true, (first, last, runs) -> {
            allRuns.set(runs);
            if (Thread.currentThread() == caller) {
                callerRuns.addAndGet(last - first);
            } else {
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (doneRuns.get() < runs - heldBack && System.nanoTime() < deadline) {
                    LockSupport.parkNanos(100_000L);
                }
            }
            CompressedProduct.columns(xs, null, weight, null, os, rows, first, last, runs, dotProducts);
            doneRuns.addAndGet(last - first);
        });
        int runs = allRuns.get();
        String took = "the caller took " + callerRuns.get() + " of " + runs + " runs";
        assertTrue(callerRuns.get() >= runs - heldBack, took);
        assertTrue((long) callerRuns.get() * CoreWorkers.PARALLELISM > runs, took + ": no more than an equal share");
        assertArrayEquals(whole.toFloatArray(), shared.toFloatArray(), 0f);
    }

    /** Several float32 products in one hand-over equal each product computed alone in one call. */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 8})
    void sharedFewRowProductsEqualTheProductsComputedWhole(int rows) {
        int in = 384;
        NDArray[] weights = {
            manager.randomNormal(new Shape(1000, in)), manager.randomNormal(new Shape(333, in))
        };
        NDArray[] biases = {manager.randomNormal(new Shape(1000)), null};
        NDArray x = manager.randomNormal(new Shape(rows, 1, in));
        NDArray[] shared = SplitProjection.fewRowsAll(x, weights, biases, false);
        for (int i = 0; i < weights.length; i++) {
            NDArray whole = FewRowProduct.output(x, weights[i], Layout.OUT_IN);
            FewRowProduct.multiply(x, weights[i], biases[i], whole, 0, weights[i].getShape().get(0), Layout.OUT_IN);
            assertArrayEquals(whole.toFloatArray(), shared[i].toFloatArray(), 0f, "product " + i);
        }
    }
}
