package io.github.djlllmzoo.server;

import io.github.djlllmzoo.cpu.NativeHeap;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives the free memory glibc's heaps keep back to the kernel, every {@link #INTERVAL}, with
 * {@code malloc_trim(0)} ({@link NativeHeap#trim()}), so that a long-running server's resident size follows the memory in use.
 *
 * <p>Why: the launcher keeps freed memory in the process (high {@code MALLOC_TRIM_THRESHOLD_} and
 * {@code MALLOC_MMAP_THRESHOLD_}, so that a step's temporaries do not come back as fresh zeroed
 * pages), and libtorch frees a step's arrays in another order than it made them, between the
 * request threads' tokenizer and JSON allocations, across one arena per thread. The freed ranges
 * the next sizes do not fit stay resident: over thousands of requests the heaps' free part grew
 * while their used part stayed flat (docs/serving-production.md, "Memory over thousands of
 * requests"). {@code malloc_trim} hands the whole pages inside free chunks back ({@code
 * MADV_DONTNEED}) in every arena; the next step faults in again only what it uses, a few
 * milliseconds once per interval. Only glibc has it: elsewhere (macOS, musl) there is nothing to
 * do and {@link #glibc()} is empty.
 */
final class NativeHeapTrimmer implements AutoCloseable {

    /**
     * How often the heaps are trimmed: often enough that what a server's threads leave between two
     * trims is a few MiB at a few requests a second, seldom enough that faulting a step's working
     * set in again after one costs nothing measurable (docs/serving-production.md).
     */
    static final Duration INTERVAL = Duration.ofSeconds(30);

    private static final Logger LOG = LoggerFactory.getLogger(NativeHeapTrimmer.class);

    private final Trim trim;
    private final ScheduledExecutorService timer;
    private final AtomicLong trims = new AtomicLong();
    private final AtomicLong nanos = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();

    /** One trim of the process's heaps; {@code true} when memory went back to the kernel. */
    @FunctionalInterface
    interface Trim {
        boolean run();
    }

    /**
     * Trims with {@code trim} every {@code every}, on a daemon thread of its own, until closed.
     *
     * @param trim the trim
     * @param every the time between two trims
     */
    NativeHeapTrimmer(Trim trim, Duration every) {
        this.trim = trim;
        this.timer =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "llmzoo-malloc-trim");
                            t.setDaemon(true);
                            return t;
                        });
        long millis = every.toMillis();
        timer.scheduleWithFixedDelay(this::trimNow, millis, millis, TimeUnit.MILLISECONDS);
    }

    /**
     * @return {@link NativeHeap#trim()}, or empty where the C library has none (not Linux, or not
     *     glibc)
     */
    static Optional<Trim> glibc() {
        return NativeHeap.available() ? Optional.of(NativeHeap::trim) : Optional.empty();
    }

    /**
     * Trims now, counting the trim and its time; a failure is logged (the first only: a trim that
     * fails once fails every interval), never thrown, so that the schedule goes on.
     */
    void trimNow() {
        long start = System.nanoTime();
        try {
            trim.run();
        } catch (RuntimeException | Error e) {
            if (failures.getAndIncrement() == 0) {
                LOG.warn("malloc_trim failed; the heaps keep their free memory", e);
            }
        }
        nanos.addAndGet(System.nanoTime() - start);
        trims.incrementAndGet();
    }

    /** @return the trims done so far */
    long trims() {
        return trims.get();
    }

    /** @return the time they took, in seconds */
    double seconds() {
        return nanos.get() / 1e9;
    }

    /** Stops trimming; a trim under way finishes. */
    @Override
    public void close() {
        timer.shutdownNow();
    }
}
