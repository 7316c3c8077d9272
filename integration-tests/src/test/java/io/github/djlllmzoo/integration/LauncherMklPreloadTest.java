package io.github.djlllmzoo.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The MKL preload of both launchers, {@code bin/llmzoo} and {@code bin/llmzoo-spark}: each builds
 * {@code libllmzoo-mkl-cpu.so} and starts its JVM with it in {@code LD_PRELOAD} under {@code
 * LLMZOO_MKL_CPU_FIX=on}, leaves it out under {@code off}, and refuses any other value. The
 * launchers run from a copy of the project whose class-path stamps are up to date (so nothing is
 * built with Maven) with a {@code java} on the PATH that reports the environment it was started
 * with. Whether the library then gives the right answers is {@code cli}'s {@code MklCpuFixTest}.
 */
class LauncherMklPreloadTest {

    private static final String LIBRARY = "libllmzoo-mkl-cpu.so";

    @TempDir
    Path copy;

    private LauncherCopy launchers;

    @BeforeEach
    void copyTheLaunchersWithUpToDateStamps() throws IOException {
        assumeTrue("Linux".equals(System.getProperty("os.name")) && "amd64".equals(System.getProperty("os.arch")),
                "the preload applies to x86-64 Linux only");
        assumeTrue(LauncherCopy.onPath("cc"), "no C compiler (cc) on the PATH");
        launchers = new LauncherCopy(copy, "echo \"LD_PRELOAD=$LD_PRELOAD\"");
    }

    @ParameterizedTest
    @ValueSource(strings = {"llmzoo", "llmzoo-spark"})
    void onBuildsTheLibraryAndPreloadsItIntoTheJvm(String launcher) throws Exception {
        LauncherCopy.Result r = launch(launcher, "on");
        Path library = copy.resolve("cli/target/native/" + LIBRARY);
        assertEquals(0, r.code(), r.err());
        assertEquals("LD_PRELOAD=" + library, r.out().strip());
        assertTrue(Files.isRegularFile(library), library.toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"llmzoo", "llmzoo-spark"})
    void offLeavesMklAlone(String launcher) throws Exception {
        LauncherCopy.Result r = launch(launcher, "off");
        assertEquals(0, r.code(), r.err());
        assertEquals("LD_PRELOAD=", r.out().strip());
    }

    @ParameterizedTest
    @ValueSource(strings = {"llmzoo", "llmzoo-spark"})
    void anotherValueIsRefusedNamingIt(String launcher) throws Exception {
        LauncherCopy.Result r = launch(launcher, "sometimes");
        assertEquals(2, r.code(), r.out());
        assertEquals("error: LLMZOO_MKL_CPU_FIX must be auto, on or off, not 'sometimes'", r.err().strip());
        assertEquals("", r.out());
    }

    private LauncherCopy.Result launch(String launcher, String mode) throws IOException, InterruptedException {
        Map<String, String> environment = new HashMap<>();
        environment.put("LD_PRELOAD", null);
        environment.put("LLMZOO_MKL_CPU_FIX", mode);
        return launchers.launch(launcher, environment, "--help");
    }
}
