package io.github.djlllmzoo.server;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The KV pool's default budget in token positions: every row of {@code --max-batch} a whole context
 * window, but no more than a share of the memory available when the server starts. The pool is
 * allocated ahead at its budget (growing it while sequences ran stalled them), so a model with a
 * long context window (Llama 3.2's 131,072 positions × 8 rows is 68 GB of float32 keys and values
 * at 1B) must not take the budget its window implies; llama-server sizes its cache by {@code -c}
 * and vLLM by {@code --gpu-memory-utilization} for the same reason.
 */
final class KvPoolBudget {

    /** The share of the memory available at start the default pool may take; the rest is left to the process and the host. */
    static final double SHARE_OF_AVAILABLE = 0.5;

    private KvPoolBudget() {}

    /**
     * @param maxBatch rows the loop decodes together
     * @param contextWindow the model's context window in positions
     * @param bytesPerToken bytes one position takes over every layer's keys and values
     * @param availableBytes memory available to the process now, or a negative value where unknown
     * @return {@code maxBatch × contextWindow}, or fewer positions where those would take more than
     *     {@link #SHARE_OF_AVAILABLE} of {@code availableBytes}; at least one
     */
    static long defaultTokens(int maxBatch, int contextWindow, long bytesPerToken, long availableBytes) {
        long wanted = (long) maxBatch * contextWindow;
        if (availableBytes < 0 || bytesPerToken <= 0) {
            return wanted;
        }
        long fits = (long) (availableBytes * SHARE_OF_AVAILABLE / bytesPerToken);
        return Math.max(1, Math.min(wanted, fits));
    }

    /**
     * Memory the process may still take: Linux's {@code MemAvailable} (free memory and the page cache
     * it can reclaim), within the physical memory the JVM sees (a container's limit, where one is
     * set); else the JVM's view of free physical memory.
     *
     * @return bytes, or -1 where neither is known
     */
    static long availableBytes() {
        long meminfo = memAvailable();
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            long total = os.getTotalMemorySize();
            if (meminfo < 0) {
                return os.getFreeMemorySize();
            }
            return total > 0 ? Math.min(meminfo, total) : meminfo;
        }
        return meminfo;
    }

    private static long memAvailable() {
        Path meminfo = Path.of("/proc/meminfo");
        if (!Files.isReadable(meminfo)) {
            return -1;
        }
        try {
            List<String> lines = Files.readAllLines(meminfo);
            for (String line : lines) {
                if (line.startsWith("MemAvailable:")) { // "MemAvailable:   17563440 kB"
                    String[] parts = line.trim().split("\\s+");
                    return Long.parseLong(parts[1]) * 1024;
                }
            }
        } catch (IOException | NumberFormatException | ArrayIndexOutOfBoundsException e) {
            return -1;
        }
        return -1;
    }
}
