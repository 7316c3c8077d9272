package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;

/** Skips a kernel's tests where the kernels cannot run, and fails them where they should but did not load. */
final class NativeKernelsAssumption {

    private NativeKernelsAssumption() {}

    /** Skips the test unless the library was built and the CPU has AVX-512F; then it must be loaded. */
    static void assumeKernelsLoaded() throws IOException {
        assumeTrue(
                NativeKernels.class.getResource(NativeKernels.RESOURCE) != null,
                "native kernels not built (no C compiler at build time)");
        String cpu = Files.readString(Paths.get("/proc/cpuinfo"));
        assumeTrue(cpu.contains(" avx512f "), "the CPU has no AVX-512F");
        assertTrue(NativeKernels.loaded(), "built and the CPU has AVX-512F, yet the kernels did not load");
    }
}
