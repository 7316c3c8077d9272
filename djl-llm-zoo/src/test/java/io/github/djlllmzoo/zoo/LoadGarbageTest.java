package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.lang.ref.WeakReference;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A large model's load is followed by a collection of its garbage (and a trim of the C heap): files
 * of {@link LoadGarbage#MIN_BYTES} or more are, smaller ones are not (tests load hundreds of small
 * models), and what the load left unreachable is gone after it.
 */
class LoadGarbageTest {

    @TempDir Path tmp;

    private Path file(String name, long bytes) throws Exception {
        Path file = tmp.resolve(name);
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(bytes); // sparse: no disk written
        }
        return file;
    }

    @Test
    void aLoadOfLargeFilesCollectsItsGarbageAndASmallOneDoesNot() throws Exception {
        assumeFalse(ManagementFactory.getRuntimeMXBean().getInputArguments().contains("-XX:+DisableExplicitGC"),
                "collections asked for are off");
        Path half = file("a.safetensors", LoadGarbage.MIN_BYTES / 2);
        assertFalse(LoadGarbage.releaseAfter(List.of(half)), "a file of half the minimum");
        WeakReference<float[]> garbage = new WeakReference<>(new float[1 << 20]); // what a load let go
        assertTrue(LoadGarbage.releaseAfter(List.of(half, file("b.safetensors", LoadGarbage.MIN_BYTES / 2))),
                "two files of the minimum together");
        assertNull(garbage.get(), "the load's garbage is still in the heap");
    }
}
