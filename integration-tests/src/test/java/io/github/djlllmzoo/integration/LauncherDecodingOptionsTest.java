package io.github.djlllmzoo.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.HashMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The JVM options {@code bin/llmzoo} adds for a process that decodes (bin/lib/launch.sh's {@code
 * add_decoding_java_opts}): the quick JIT compiler alone for every command but {@code finetune}, and
 * for {@code serve} the CPU workers' short idle spin too, each unless {@code LLMZOO_JAVA_OPTS}
 * already sets it; on a GPU ({@code --device gpu}) the JVM's own compilers.
 */
class LauncherDecodingOptionsTest {

    private static final String SPIN = "-Dllmzoo.cpu.idleSpinNanos=50000";
    private static final String C1 = "-XX:TieredStopAtLevel=1";

    @TempDir
    Path copy;

    private LauncherCopy launchers;

    @BeforeEach
    void copyTheLaunchers() throws IOException {
        assumeTrue("Linux".equals(System.getProperty("os.name")), "the launchers are bash scripts for Linux");
        launchers = new LauncherCopy(copy, "for a in \"$@\"; do echo \"$a\"; done");
    }

    @Test
    void serveRunsTheQuickCompilerAloneAndParksWorkersSoon() throws Exception {
        List<String> options = javaOptions(null, "serve");
        assertTrue(options.contains(SPIN), options.toString());
        assertTrue(options.contains(C1), options.toString());
        assertTrue(options.contains("-Xmx8g"), options.toString());
    }

    @Test
    void optionsTheUserSetAreKept() throws Exception {
        List<String> options = javaOptions("-Xmx4g -XX:TieredStopAtLevel=4 -Dllmzoo.cpu.idleSpinNanos=7", "serve");
        assertEquals(List.of("-Xmx4g", "-XX:TieredStopAtLevel=4", "-Dllmzoo.cpu.idleSpinNanos=7"),
                options.subList(0, 3));
        assertFalse(options.contains(SPIN), options.toString());
        assertFalse(options.contains(C1), options.toString());
        assertFalse(javaOptions("-XX:-TieredCompilation", "serve").contains(C1));
    }

    @Test
    void otherDecodingCommandsRunTheQuickCompilerAloneWithTheDefaultSpin() throws Exception {
        for (String command : List.of("generate", "bench", "score")) {
            List<String> options = javaOptions(null, command);
            assertTrue(options.contains(C1), command + ": " + options);
            assertFalse(options.contains(SPIN), command + ": " + options);
        }
    }

    @Test
    void aCommandOnAGpuKeepsTheOptimizingCompiler() throws Exception {
        for (String[] device : List.of(new String[] {"--device", "gpu"}, new String[] {"--device=gpu0"})) {
            List<String> options = javaOptions(null, "bench", device);
            assertFalse(options.contains(C1), String.join(" ", device) + ": " + options);
        }
        assertTrue(javaOptions(null, "bench", "--device", "cpu").contains(C1));
    }

    @Test
    void fineTuningKeepsTheJvmDefaults() throws Exception {
        List<String> options = javaOptions(null, "finetune");
        assertFalse(options.contains(C1), options.toString());
        assertFalse(options.contains(SPIN), options.toString());
    }

    private List<String> javaOptions(String userOptions, String command, String... args)
            throws IOException, InterruptedException {
        HashMap<String, String> environment = new HashMap<>();
        environment.put("LLMZOO_JAVA_OPTS", userOptions);
        environment.put("LLMZOO_MKL_CPU_FIX", "off");
        String[] line = new String[args.length + 2];
        line[0] = command;
        System.arraycopy(args, 0, line, 1, args.length);
        line[line.length - 1] = "--help";
        LauncherCopy.Result r = launchers.launch("llmzoo", environment, line);
        assertEquals(0, r.code(), r.err());
        List<String> java = Arrays.asList(r.out().strip().split("\n"));
        int main = java.indexOf("io.github.djlllmzoo.cli.LlmZoo");
        assertTrue(main > 0, java.toString());
        return java.subList(0, java.indexOf("-cp"));
    }
}
