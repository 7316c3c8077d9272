package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** {@link NativeHeapTrimmer}: its schedule, and glibc's trim giving freed heap pages back. */
class NativeHeapTrimmerTest {

    /** Blocks under glibc's smallest mmap threshold (128 KiB), so that they come from a heap. */
    private static final int BLOCK = 64 << 10;

    /** Blocks allocated: 64 MiB, half of it freed in holes. */
    private static final int BLOCKS = 1024;

    @Test
    void trimsOnItsScheduleUntilClosedAndCountsEachTrim() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        NativeHeapTrimmer trimmer =
                new NativeHeapTrimmer(
                        () -> {
                            calls.incrementAndGet();
                            return true;
                        },
                        Duration.ofMillis(10));
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (calls.get() < 3 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        trimmer.close();
        Thread.sleep(50); // a trim under way when closed ends meanwhile
        int afterClose = calls.get();
        assertTrue(afterClose >= 3, "trims in 10 s at 10 ms: " + afterClose);
        assertEquals(afterClose, trimmer.trims());
        Thread.sleep(100);
        assertEquals(afterClose, calls.get(), "trims after close");
    }

    @Test
    void aFailingTrimIsCountedAndTheScheduleGoesOn() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        try (NativeHeapTrimmer trimmer =
                new NativeHeapTrimmer(
                        () -> {
                            calls.incrementAndGet();
                            throw new IllegalStateException("no heap");
                        },
                        Duration.ofMillis(10))) {
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (trimmer.trims() < 2 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertTrue(trimmer.trims() >= 2, "trims after a failure: " + trimmer.trims());
        }
    }

    @Test
    void glibcTrimGivesThePagesOfFreedHeapBlocksBackToTheKernel() throws IOException {
        Optional<NativeHeapTrimmer.Trim> glibc = NativeHeapTrimmer.glibc();
        assumeTrue(glibc.isPresent(), "malloc_trim needs glibc");
        long[] blocks = new long[BLOCKS];
        for (int i = 0; i < BLOCKS; i++) {
            blocks[i] = Native.malloc(BLOCK);
            new Pointer(blocks[i]).setMemory(0, BLOCK, (byte) 1); // resident
        }
        try {
            // Every other block: the holes cannot merge with each other or the heap's top, so
            // free() alone keeps their pages, as the server's heaps kept theirs.
            for (int i = 0; i < BLOCKS; i += 2) {
                Native.free(blocks[i]);
                blocks[i] = 0;
            }
            long freed = (long) BLOCK * (BLOCKS / 2);
            long before = rssAnonBytes();
            glibc.get().run();
            long given = before - rssAnonBytes();
            // Each hole keeps its first and last partial page: 14 of its 16 pages can go.
            assertTrue(
                    given >= freed / 2,
                    "resident memory given back " + given + " of " + freed + " bytes freed");
        } finally {
            for (long block : blocks) {
                if (block != 0) {
                    Native.free(block);
                }
            }
        }
    }

    /** @return the process's anonymous resident memory ({@code RssAnon} of /proc/self/status) */
    private static long rssAnonBytes() throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("RssAnon:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IOException("/proc/self/status has no RssAnon");
    }
}
