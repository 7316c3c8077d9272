package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The library {@code bin/llmzoo} preloads on AMD CPUs ({@code src/main/native/llmzoo_mkl_cpu.c}),
 * built the way the script builds it: under it oneMKL's vendor kernels still reproduce the golden
 * cases, and {@code bench} says it is in use. Each check runs the command line in a child JVM
 * started with {@code LD_PRELOAD}. Skipped off x86-64 Linux or without a C compiler.
 */
class MklCpuFixTest {

    private static final Path SOURCE = Paths.get("src/main/native/llmzoo_mkl_cpu.c");

    @TempDir
    static Path work;

    private static Path library;

    @BeforeAll
    static void buildTheLibraryAsBinLlmzooDoes() throws Exception {
        assumeTrue("Linux".equals(System.getProperty("os.name")) && "amd64".equals(System.getProperty("os.arch")),
                "the preload applies to x86-64 Linux only");
        assumeTrue(onPath("cc"), "no C compiler (cc) on the PATH");
        library = work.resolve(MklCpuFix.LIBRARY);
        Process cc = new ProcessBuilder("cc", "-shared", "-fPIC", "-O2", "-o", library.toString(), SOURCE.toString())
                .redirectErrorStream(true)
                .start();
        String log = new String(cc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(cc.waitFor(60, TimeUnit.SECONDS), "cc finished");
        assertEquals(0, cc.exitValue(), log);
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt2-tiny", "gpt2-wide", "llama-gqa", "llama3-rope-scaling"})
    void goldenLogprobsAndGreedyIdsHoldWithTheVendorKernels(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        String dir = golden.dir().toString();
        long[] prompt = golden.ids("prompt_ids");
        double[] expected = golden.numbers("prompt_logprobs");

        JsonObject score = JsonParser.parseString(llmzooPreloaded("score", "--model", dir,
                "--ids", golden.idList("prompt_ids"), "--output", "json")).getAsJsonObject();
        JsonArray logprobs = score.getAsJsonArray("token_logprobs");
        assertEquals(prompt.length, logprobs.size());
        for (int i = 1; i < logprobs.size(); i++) {
            assertEquals(expected[i - 1], logprobs.get(i).getAsDouble(), 1e-3, name + " token " + i);
        }

        long[] greedy = golden.ids("greedy_ids");
        String generated = llmzooPreloaded("generate", "--model", dir, "--prompt-ids", golden.idList("prompt_ids"),
                "--max-new-tokens", Integer.toString(greedy.length), "--greedy", "--output", "ids");
        assertArrayEquals(greedy, TokenIds.parse("ids", generated.trim()), name + ": greedy ids");
    }

    @Test
    void benchReportsThePreloadedLibrary() throws Exception {
        JsonObject r = JsonParser.parseString(llmzooPreloaded("bench", "--model", GoldenCase.dir("gpt2-tiny").toString(),
                "--runs", "1", "--warmup", "0", "--prompt-tokens", "4", "--new-tokens", "2", "--long-positions", "0",
                "--bandwidth-mib", "0", "--output", "json")).getAsJsonObject();
        assertTrue(r.get("mkl_cpu_fix").getAsBoolean(), r.toString());
        assertTrue(r.get("blas").getAsString().contains(MklCpuFix.LIBRARY + " preloaded"), r.get("blas").getAsString());
    }

    @Test
    void theSuiteRunsWithTheLibraryPreloadedWhereLlmzooMklCpuFixIsOn() {
        assumeTrue("on".equals(System.getenv("LLMZOO_MKL_CPU_FIX")), "LLMZOO_MKL_CPU_FIX is not on");
        assertTrue(MklCpuFix.loaded(), "LD_PRELOAD=" + System.getenv("LD_PRELOAD"));
    }

    @Test
    void benchWithoutThePreloadSaysSo() {
        assumeTrue(!System.getenv().getOrDefault("LD_PRELOAD", "").contains(MklCpuFix.LIBRARY),
                "this JVM itself was started with the library preloaded");
        CliRunner run = CliRunner.run("bench", "--model", GoldenCase.dir("gpt2-tiny").toString(), "--runs", "1",
                "--warmup", "0", "--prompt-tokens", "4", "--new-tokens", "2", "--long-positions", "0",
                "--bandwidth-mib", "0", "--output", "json");
        assertEquals(0, run.exitCode, run.err);
        JsonObject r = JsonParser.parseString(run.out).getAsJsonObject();
        assertFalse(r.get("mkl_cpu_fix").getAsBoolean(), r.toString());
        assertFalse(r.get("blas").getAsString().contains("preloaded"), r.get("blas").getAsString());
    }

    /** Runs the command line in a child JVM with the library preloaded; returns its standard output. */
    private static String llmzooPreloaded(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(
                Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx2g", "-Dai.djl.pytorch.num_threads=1", "-DOPT_OUT_TRACKING=true",
                "-cp", System.getProperty("java.class.path"), LlmZoo.class.getName()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().put("OPT_OUT_TRACKING", "true");
        pb.environment().put("LD_PRELOAD", library.toString());
        Path err = Files.createTempFile(work, "stderr", ".log");
        pb.redirectError(err.toFile());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "llmzoo " + args[0] + " finished");
        assertEquals(0, p.exitValue(), "llmzoo " + String.join(" ", args) + ": " + Files.readString(err));
        return out;
    }

    private static boolean onPath(String program) {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator))
                .anyMatch(dir -> !dir.isEmpty() && Files.isExecutable(Paths.get(dir, program)));
    }
}
