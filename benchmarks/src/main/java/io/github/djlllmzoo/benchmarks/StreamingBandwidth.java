package io.github.djlllmzoo.benchmarks;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The machine's streaming read bandwidth as the engine sees it: the time of DJL {@code sum()}s
 * over a float32 array far larger than any cache, one slice per CPU core summed concurrently (so
 * the figure does not depend on PyTorch's intra-op thread count), or one sum on a GPU. This is the
 * ceiling a bandwidth-bound decode step can reach with the same engine.
 */
public final class StreamingBandwidth {

    private StreamingBandwidth() {}

    /**
     * Measures.
     *
     * @param manager where to allocate the array (the model's device)
     * @param bytes the array size in bytes (1 GiB is well past every cache)
     * @param passes timed passes after one warm-up pass
     * @return the median bandwidth in GB/s (1e9 bytes per second)
     */
    public static double measure(NDManager manager, long bytes, int passes) {
        boolean cpu = Device.Type.CPU.equals(manager.getDevice().getDeviceType());
        int cores = cpu ? Runtime.getRuntime().availableProcessors() : 1;
        ExecutorService threads = Executors.newFixedThreadPool(cores);
        try (NDManager scope = manager.newSubManager()) {
            long elements = bytes / 4 / cores * cores;
            NDArray data = scope.ones(new Shape(elements), DataType.FLOAT32); // touched pages
            NDList slices = data.split(cores); // views
            sumAll(slices, threads);
            double[] gbPerS = new double[passes];
            for (int i = 0; i < passes; i++) {
                long start = System.nanoTime();
                sumAll(slices, threads);
                gbPerS[i] = elements * 4 / ((System.nanoTime() - start) / 1e9) / 1e9;
            }
            return median(gbPerS);
        } finally {
            threads.shutdown();
        }
    }

    private static void sumAll(NDList slices, ExecutorService threads) {
        List<Future<Float>> sums = new ArrayList<>();
        for (NDArray slice : slices) {
            sums.add(threads.submit(() -> {
                try (NDArray sum = slice.sum()) {
                    return sum.getFloat(); // waits for the device
                }
            }));
        }
        awaitAll(sums);
    }

    /**
     * Waits for every task of a measurement.
     *
     * @param tasks the submitted tasks
     */
    static void awaitAll(List<? extends Future<?>> tasks) {
        try {
            for (Future<?> task : tasks) {
                task.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    /**
     * @param values measurements (not modified)
     * @return their median
     */
    public static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
