package io.github.djlllmzoo.zoo;

import io.github.djlllmzoo.cpu.NativeHeap;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives back what a large model's load used and no longer needs, once, when it ends: the Java
 * garbage of reading and quantizing (a collection, after which the collector also shrinks a heap
 * the load had filled, G1 to a few times what is live) and the C heap's pages the load freed
 * ({@link NativeHeap#trim()}). A 1.1B model's {@code --dtype q4_k} load left 100-270 MiB of Java
 * heap and 50-80 MiB of freed C heap resident beside its 680 MiB of weights (docs/PERFORMANCE.md, q4_k
 * resident memory).
 */
final class LoadGarbage {

    private static final Logger logger = LoggerFactory.getLogger(LoadGarbage.class);

    /**
     * The weights' bytes from which a load is followed by a collection: such a load takes seconds
     * and makes garbage of the order of its size, against a full collection's tens of milliseconds
     * over the little a loaded model leaves live in the Java heap. Smaller models (tests load
     * hundreds) skip it.
     */
    static final long MIN_BYTES = 256L << 20;

    private LoadGarbage() {}

    /**
     * Releases a load's garbage if the files it read hold at least {@link #MIN_BYTES}.
     *
     * @param files the weight files the load read
     * @return whether it did
     */
    static boolean releaseAfter(List<Path> files) {
        long bytes = 0;
        for (Path file : files) {
            try {
                bytes += Files.size(file);
            } catch (IOException e) {
                return false; // read a moment ago: nothing to give back that matters if it is gone now
            }
        }
        if (bytes < MIN_BYTES) {
            return false;
        }
        release();
        return true;
    }

    /** Collects the Java garbage, then trims the C heap. */
    static void release() {
        long start = System.nanoTime();
        System.gc();
        boolean trimmed = NativeHeap.trim();
        logger.debug("load garbage released in {} ms (C heap trimmed: {})", (System.nanoTime() - start) / 1_000_000, trimmed);
    }
}
