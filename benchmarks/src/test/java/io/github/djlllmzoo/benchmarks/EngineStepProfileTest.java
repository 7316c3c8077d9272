package io.github.djlllmzoo.benchmarks;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The GPU profiling tool runs on the CPU too and reports the calls of a step by operation. */
class EngineStepProfileTest {

    @TempDir Path tmp;

    @Test
    void reportsTheStepsTimeAndItsEngineCallsByOperation() throws Exception {
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream out = System.out;
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            EngineStepProfile.main(new String[] {"gpt2-tiny", "cpu", "float32", "8", "4", "2", tmp.toString()});
        } finally {
            System.setOut(out);
        }
        String report = captured.toString(StandardCharsets.UTF_8);
        assertTrue(report.contains("decode step mean"), report);
        assertTrue(report.contains("engine calls a step"), report);
        assertTrue(report.contains("aten::matmul"), report);
        assertTrue(Files.size(tmp.resolve("engine-step-trace.json")) > 0, "the profiler's trace is kept");
    }
}
