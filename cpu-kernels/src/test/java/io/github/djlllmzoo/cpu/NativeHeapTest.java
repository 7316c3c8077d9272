package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import sun.misc.Unsafe;

/**
 * {@link NativeHeap#trim()} gives back the pages of blocks freed inside the C library's heap and
 * leaves the blocks in use as they were: 4 MiB freed below a block still in use (so that free()
 * itself cannot return it, as it does the heap's top) is given back, and the kept block's bytes are
 * unchanged.
 */
class NativeHeapTest {

    /** Blocks below glibc's default mmap threshold (128 KiB), so they come from the heap, not a mapping each. */
    private static final int BLOCK = 64 << 10;

    private static final int BLOCKS = 64;

    private static Unsafe unsafe() throws ReflectiveOperationException {
        Field field = Unsafe.class.getDeclaredField("theUnsafe");
        field.setAccessible(true);
        return (Unsafe) field.get(null);
    }

    @Test
    void trimGivesBackFreedBlocksAndKeepsTheBlocksInUse() throws Exception {
        assumeTrue(Files.readString(Path.of("/proc/self/maps")).contains("/libc.so.6"), "glibc (malloc_trim)");
        Unsafe unsafe = unsafe();
        long[] freed = new long[BLOCKS];
        for (int i = 0; i < BLOCKS; i++) {
            freed[i] = unsafe.allocateMemory(BLOCK);
            unsafe.setMemory(freed[i], BLOCK, (byte) 1); // resident
        }
        long kept = unsafe.allocateMemory(BLOCK); // above the freed blocks: they are not the heap's top
        unsafe.setMemory(kept, BLOCK, (byte) 7);
        try {
            for (long block : freed) {
                unsafe.freeMemory(block);
            }
            assertTrue(NativeHeap.trim(), "nothing given back after freeing " + BLOCKS * BLOCK + " bytes");
            for (long i = 0; i < BLOCK; i += 4096) {
                assertEquals(7, unsafe.getByte(kept + i), "the block in use, byte " + i);
            }
        } finally {
            unsafe.freeMemory(kept);
        }
    }
}
