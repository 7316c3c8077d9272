package io.github.djlllmzoo.benchmarks;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.cpu.TorchThreads;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The engine's multiply-add rate as matrix products can at best reach it: DJL {@code matMul}s of
 * square matrices that stay in the caches, one product per CPU core at once (each thread on one
 * PyTorch intra-op thread), or one product on a GPU. This is the ceiling a compute-bound decode
 * step can reach: a step of {@code B} sequences does {@code B} multiply-adds per weight, so from a
 * few sequences on its products are bound by this rate rather than by reading the weights.
 */
public final class ComputePeak {

    /** Products per core in one timed pass. */
    private static final int PRODUCTS_PER_PASS = 8;

    private ComputePeak() {}

    /**
     * Measures.
     *
     * @param manager where to allocate the matrices (the model's device)
     * @param dataType the element type of the products (the model's)
     * @param size the matrices' side ({@code size x size}; 512 in float32 is 1 MiB a matrix)
     * @param passes timed passes after one warm-up pass
     * @return the median rate in GFLOP/s (1e9 floating-point operations a second, two per
     *     multiply-add)
     */
    public static double measure(NDManager manager, DataType dataType, int size, int passes) {
        boolean cpu = Device.Type.CPU.equals(manager.getDevice().getDeviceType());
        int cores = cpu ? Runtime.getRuntime().availableProcessors() : 1;
        ExecutorService threads = Executors.newFixedThreadPool(cores, task -> {
            Thread thread = new Thread(() -> {
                if (cpu) {
                    TorchThreads.setIntraOp(1); // PyTorch keeps the count per thread
                }
                task.run();
            }, "llmzoo-compute-peak");
            thread.setDaemon(true);
            return thread;
        });
        try (NDManager scope = manager.newSubManager()) {
            List<NDArray> matrices = new ArrayList<>();
            // Entries of variance 1/size keep the chained products' values near 1.
            float bound = (float) Math.sqrt(3.0 / size);
            for (int i = 0; i < cores; i++) {
                matrices.add(scope.randomUniform(-bound, bound, new Shape(size, size), dataType));
            }
            multiplyAll(matrices, threads);
            double flopsPerPass = 2.0 * size * size * size * PRODUCTS_PER_PASS * cores;
            double[] gflops = new double[passes];
            for (int i = 0; i < passes; i++) {
                long start = System.nanoTime();
                multiplyAll(matrices, threads);
                gflops[i] = flopsPerPass / ((System.nanoTime() - start) / 1e9) / 1e9;
            }
            return StreamingBandwidth.median(gflops);
        } finally {
            threads.shutdown();
        }
    }

    private static void multiplyAll(List<NDArray> matrices, ExecutorService threads) {
        List<Future<Float>> products = new ArrayList<>();
        for (NDArray matrix : matrices) {
            products.add(threads.submit(() -> {
                try (NDManager pass = matrix.getManager().newSubManager()) {
                    NDArray product = matrix;
                    for (int i = 0; i < PRODUCTS_PER_PASS; i++) {
                        // Each product feeds the next: nothing is skipped and nothing overlaps.
                        NDArray next = matrix.matMul(product);
                        next.attach(pass);
                        product = next;
                    }
                    return product.getFloat(0, 0); // waits for the device
                }
            }));
        }
        StreamingBandwidth.awaitAll(products);
    }
}
