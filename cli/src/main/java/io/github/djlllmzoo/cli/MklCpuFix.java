package io.github.djlllmzoo.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.stream.Stream;

/**
 * Whether this process runs oneMKL with the kernels its CPU supports: on a CPU not made by Intel,
 * oneMKL (inside PyTorch's CPU library) runs generic kernels unless {@code libllmzoo-mkl-cpu.so}
 * is preloaded, as {@code bin/llmzoo} does on AMD CPUs (see {@code
 * cli/src/main/native/llmzoo_mkl_cpu.c}). Read from Linux's {@code /proc}.
 */
final class MklCpuFix {

    /** The file name of the preloaded library. */
    static final String LIBRARY = "libllmzoo-mkl-cpu.so";

    private static final Path MAPS = Paths.get("/proc/self/maps");
    private static final Path CPU_INFO = Paths.get("/proc/cpuinfo");

    private MklCpuFix() {}

    /** @return whether {@link #LIBRARY} is mapped into this process */
    static boolean loaded() {
        try (Stream<String> lines = Files.lines(MAPS, StandardCharsets.US_ASCII)) {
            return lines.anyMatch(line -> line.endsWith("/" + LIBRARY));
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** @return the CPU's vendor id (such as {@code AuthenticAMD} or {@code GenuineIntel}), or "unknown" */
    static String cpuVendor() {
        try (Stream<String> lines = Files.lines(CPU_INFO, StandardCharsets.US_ASCII)) {
            return lines.filter(line -> line.startsWith("vendor_id"))
                    .map(line -> line.substring(line.indexOf(':') + 1).trim())
                    .findFirst()
                    .orElse("unknown");
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }

    /**
     * @param vendor the CPU's vendor id, from {@link #cpuVendor()}
     * @param loaded whether the library is loaded, from {@link #loaded()}
     * @return one line on the BLAS kernels in use, for reports
     */
    static String describe(String vendor, boolean loaded) {
        if (loaded) {
            return vendor + "; oneMKL uses the CPU's own AVX2/AVX-512 kernels (" + LIBRARY + " preloaded)";
        }
        if ("GenuineIntel".equals(vendor)) {
            return vendor + "; oneMKL picks its kernels itself";
        }
        return vendor + "; oneMKL runs its generic kernels on this CPU (bin/llmzoo preloads " + LIBRARY
                + " unless LLMZOO_MKL_CPU_FIX=off; elsewhere see docs/PERFORMANCE.md)";
    }
}
