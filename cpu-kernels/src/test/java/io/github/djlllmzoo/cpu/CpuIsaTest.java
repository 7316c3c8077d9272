package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class CpuIsaTest {

    private static final Set<String> AVX512_CPU = Set.of("avx2", "fma", "f16c", "avx512f", "avx512bw");
    private static final Set<String> AVX2_CPU = Set.of("avx2", "fma", "f16c");

    @Test
    void anAvx512CpuPrefersAvx512ThenAvx2AndAnAvx2OnlyCpuGetsAvx2() {
        assertEquals(List.of(CpuIsa.AVX512, CpuIsa.AVX2, CpuIsa.NONE), CpuIsa.runnable("Linux", "amd64", AVX512_CPU));
        assertEquals(List.of(CpuIsa.AVX2, CpuIsa.NONE), CpuIsa.runnable("Linux", "amd64", AVX2_CPU));
        assertEquals(List.of(CpuIsa.NONE), CpuIsa.runnable("Linux", "amd64", Set.of("sse4_2", "avx")),
                "AVX without AVX2: the reference path");
    }

    @Test
    void everyLinuxArm64CpuRunsNeonAndOtherSystemsNone() {
        assertEquals(List.of(CpuIsa.NEON, CpuIsa.NONE), CpuIsa.runnable("Linux", "aarch64", Set.of("fp", "asimd")));
        assertEquals(List.of(CpuIsa.NONE), CpuIsa.runnable("Windows 11", "amd64", AVX512_CPU));
    }

    @Test
    void theArm64LibraryWithSdotIsTakenWhereTheCpuReportsTheDotProductExtension() {
        assertEquals("native/linux-aarch64/libllmzoo-kernels-neon-dotprod.so",
                NativeKernels.resource(CpuIsa.NEON, Set.of("asimd", "asimddp")));
        assertEquals("native/linux-aarch64/libllmzoo-kernels-neon.so",
                NativeKernels.resource(CpuIsa.NEON, Set.of("asimd")));
        assertEquals("native/linux-x86_64/libllmzoo-kernels-avx2.so", NativeKernels.resource(CpuIsa.AVX2, AVX512_CPU));
    }

    @Test
    void aForcedVariantTheCpuLacksIsRefusedNamingIt() {
        NativeKernels.Selection onAvx2 = NativeKernels.select("avx512", "Linux", "amd64", AVX2_CPU);
        assertEquals(CpuIsa.NONE, onAvx2.isa());
        assertTrue(onAvx2.refused().getMessage().contains("-Dllmzoo.cpu.isa=avx512"), onAvx2.refused().getMessage());
        NativeKernels.Selection neonOnX86 = NativeKernels.select("NEON", "Linux", "amd64", AVX512_CPU);
        assertTrue(neonOnX86.refused().getMessage().contains("does not report neon"), neonOnX86.refused().getMessage());
    }

    @Test
    void anUnknownVariantIsRefusedAndNoneMeansTheReferencePath() {
        UnsupportedCpuIsaException e = assertThrows(UnsupportedCpuIsaException.class, () -> CpuIsa.named("sse2"));
        assertTrue(e.getMessage().contains("sse2"), e.getMessage());
        NativeKernels.Selection none = NativeKernels.select("none", "Linux", "amd64", AVX512_CPU);
        assertEquals(CpuIsa.NONE, none.isa());
        assertNull(none.refused());
    }
}
