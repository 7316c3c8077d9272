package io.github.djlllmzoo.examples;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.Arrays;

/**
 * The machine's streaming read bandwidth as the engine sees it: the time of a DJL {@code sum()}
 * over a float32 array far larger than any cache, run by PyTorch's own threads on the model's
 * device. This is the ceiling a bandwidth-bound decode step can reach with the same engine.
 */
final class StreamingBandwidth {

    private StreamingBandwidth() {}

    /**
     * Measures.
     *
     * @param manager where to allocate the array (the model's device)
     * @param bytes the array size in bytes (1 GiB is well past every cache)
     * @param passes timed passes after one warm-up pass
     * @return the median bandwidth in GB/s (1e9 bytes per second)
     */
    static double measure(NDManager manager, long bytes, int passes) {
        try (NDManager scope = manager.newSubManager()) {
            NDArray data = scope.ones(new Shape(bytes / 4), DataType.FLOAT32); // touched pages
            data.sum().close();
            double[] gbPerS = new double[passes];
            for (int i = 0; i < passes; i++) {
                long start = System.nanoTime();
                try (NDArray sum = data.sum()) {
                    sum.getFloat(); // waits for the device
                }
                gbPerS[i] = bytes / ((System.nanoTime() - start) / 1e9) / 1e9;
            }
            return median(gbPerS);
        }
    }

    /**
     * @param values measurements (not modified)
     * @return their median
     */
    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
