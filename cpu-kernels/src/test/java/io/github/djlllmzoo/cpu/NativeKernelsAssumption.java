package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Set;

/** Skips a kernel's tests where the kernels cannot run, and fails them where they should but did not load. */
final class NativeKernelsAssumption {

    private NativeKernelsAssumption() {}

    /**
     * Skips the test unless the variant forced by {@code -Dllmzoo.cpu.isa} (else the best the CPU
     * reports) was built; then it must be the one loaded.
     */
    static void assumeKernelsLoaded() {
        Set<String> features = CpuIsa.cpuFeatures();
        String forced = System.getProperty(CpuIsa.PROPERTY);
        CpuIsa expected = forced != null
                ? CpuIsa.named(forced)
                : CpuIsa.runnable(System.getProperty("os.name", ""), System.getProperty("os.arch", ""), features)
                        .get(0);
        assumeTrue(expected != CpuIsa.NONE, "no native kernels for this CPU, or -Dllmzoo.cpu.isa=none");
        assumeTrue(
                NativeKernels.class.getResource(NativeKernels.resource(expected, features)) != null,
                "native kernels not built for " + expected.id() + " (no C compiler for it at build time)");
        assertEquals(expected, NativeKernels.isa(), "built and runnable, yet another variant was loaded");
    }
}
