package io.github.djlllmzoo.cpu;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The instruction set whose native kernels run: chosen once, when the kernels' library loads, from
 * what the CPU reports ({@code /proc/cpuinfo} on Linux), or forced with {@code
 * -Dllmzoo.cpu.isa=avx512|avx2|neon|none}. {@link #NONE} is the reference path: no native kernels,
 * the engine's operations throughout. The {@code bench} JSON's {@code cpu_isa} and the startup log
 * name it.
 */
public enum CpuIsa {
    /** x86-64 with AVX-512F (and FMA); AVX512_VNNI and AVX512_BF16 dot products where the CPU has them. */
    AVX512("avx512", "linux-x86_64"),
    /** x86-64 with AVX2, FMA and F16C, no AVX-512: the kernels at 8 floats a vector. */
    AVX2("avx2", "linux-x86_64"),
    /** ARM64 with NEON (Advanced SIMD); the int8 products by {@code sdot} where the CPU has the dot-product extension. */
    NEON("neon", "linux-aarch64"),
    /** No native kernels: the engine's operations (the reference path). */
    NONE("none", null);

    /** The system property that forces a variant. */
    public static final String PROPERTY = "llmzoo.cpu.isa";

    private final String id;
    private final String platform;

    CpuIsa(String id, String platform) {
        this.id = id;
        this.platform = platform;
    }

    /** @return the name {@code -Dllmzoo.cpu.isa} and the bench JSON use, e.g. {@code avx2} */
    public String id() {
        return id;
    }

    /**
     * The variant that runs in this JVM: the one {@code -Dllmzoo.cpu.isa} forces, else the best this
     * CPU has a library for; {@link #NONE} where no library could be loaded.
     *
     * @return the variant
     * @throws UnsupportedCpuIsaException where {@code -Dllmzoo.cpu.isa} names a variant this CPU or
     *     this build cannot run, or no variant at all
     */
    public static CpuIsa selected() {
        return NativeKernels.isa();
    }

    /** {@code os-arch} as the build names its library folders, e.g. {@code linux-x86_64}; null elsewhere. */
    String platform() {
        return platform;
    }

    /**
     * The variant a property value names.
     *
     * @param value the property's value
     * @return the variant
     * @throws UnsupportedCpuIsaException where it names none
     */
    static CpuIsa named(String value) {
        for (CpuIsa isa : values()) {
            if (isa.id.equals(value.trim().toLowerCase(Locale.ROOT))) {
                return isa;
            }
        }
        throw new UnsupportedCpuIsaException("-D" + PROPERTY + "=" + value
                + " is not one of avx512, avx2, neon, none");
    }

    /**
     * The variants this machine's CPU can run, best first, from its OS and architecture and the
     * features the CPU reports.
     *
     * @param os {@code os.name}
     * @param arch {@code os.arch}
     * @param features the CPU's feature flags ({@code /proc/cpuinfo}'s {@code flags} on x86, {@code
     *     Features} on ARM)
     * @return the variants, {@link #NONE} last
     */
    static List<CpuIsa> runnable(String os, String arch, Set<String> features) {
        boolean linux = os.toLowerCase(Locale.ROOT).contains("linux");
        List<CpuIsa> runnable = new ArrayList<>();
        if (linux && (arch.equals("amd64") || arch.equals("x86_64"))) {
            boolean avx2 = features.containsAll(Set.of("avx2", "fma", "f16c"));
            if (avx2 && features.contains("avx512f")) {
                runnable.add(AVX512);
            }
            if (avx2) {
                runnable.add(AVX2);
            }
        } else if (linux && arch.equals("aarch64")) {
            runnable.add(NEON); // Advanced SIMD is part of every ARMv8-A CPU
        }
        runnable.add(NONE);
        return runnable;
    }

    /** The CPU's feature flags from {@code /proc/cpuinfo} (x86 {@code flags}, ARM {@code Features}); empty elsewhere. */
    static Set<String> cpuFeatures() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/cpuinfo"))) {
                if (line.startsWith("flags") || line.startsWith("Features")) {
                    return Set.of(line.substring(line.indexOf(':') + 1).trim().split("\\s+"));
                }
            }
        } catch (IOException | RuntimeException e) {
            return Set.of();
        }
        return Set.of();
    }
}
