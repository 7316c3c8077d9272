package io.github.djlllmzoo.benchmarks;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.SlotKvCache;
import java.util.Arrays;
import java.util.Locale;

/**
 * What the KV pool's per-row slots pay when a row leaves: {@link SlotKvCache#move} copies the last
 * row's positions (keys and values of every layer) into the freed row, so that the rows in use stay
 * contiguous; a block table would only hand the freed blocks back. Times one move of rows of
 * several lengths in a pool of Llama-110M's shape (12 layers, 4 key/value heads of 64, float32, 8
 * rows of 2,048 positions) and prints milliseconds and the bytes copied per second.
 *
 * <p>Run as {@code SlotMoveCost [layers kvHeads headDim capacity]}.
 */
public final class SlotMoveCost {

    private static final int ROWS = 8;
    private static final int REPEATS = 21;

    private SlotMoveCost() {}

    /**
     * Runs it.
     *
     * @param args optionally the pool's shape: layers, key/value heads, head width, positions a row
     */
    public static void main(String[] args) {
        int layers = args.length > 0 ? Integer.parseInt(args[0]) : 12;
        int heads = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        int headDim = args.length > 2 ? Integer.parseInt(args[2]) : 64;
        int capacity = args.length > 3 ? Integer.parseInt(args[3]) : 2048;
        try (NDManager manager = NDManager.newBaseManager();
                SlotKvCache cache = new SlotKvCache(manager, layers, heads, headDim, capacity, DataType.FLOAT32)) {
            cache.reserve(ROWS, capacity);
            System.out.printf(Locale.ROOT, "pool: %d layers x %d kv heads x %d, %d rows x %d positions, %.0f KiB a position%n",
                    layers, heads, headDim, ROWS, capacity, cache.bytesPerPosition() / 1024.0);
            System.out.println("length  median ms  GB/s");
            for (int length : new int[] {64, 256, 1024, capacity}) {
                double[] ms = new double[REPEATS];
                for (int i = 0; i < REPEATS; i++) {
                    cache.clear(ROWS - 1);
                    cache.commitPrefill(ROWS - 1, length); // the last row holds `length` positions
                    long start = System.nanoTime();
                    cache.move(ROWS - 1, 0);
                    ms[i] = (System.nanoTime() - start) / 1e6;
                }
                Arrays.sort(ms);
                double median = ms[REPEATS / 2];
                System.out.printf(Locale.ROOT, "%6d  %9.3f  %4.1f%n",
                        length, median, length * cache.bytesPerPosition() / (median / 1e3) / 1e9);
            }
        }
    }
}
