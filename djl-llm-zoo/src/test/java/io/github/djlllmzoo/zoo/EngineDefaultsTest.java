package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class EngineDefaultsTest {

    private static final Path GPT2_TINY =
            Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "gpt2-tiny").toAbsolutePath();

    @ParameterizedTest
    @CsvSource({"OPT_OUT_TRACKING, true, false", "RUST_FLAVOR, cpu, cu124"})
    void eachDefaultIsSetUnlessTheVariableOrThePropertyChose(String key, String value, String chosen) {
        Properties properties = new Properties();
        EngineDefaults.apply(Map.of(), properties);
        assertEquals(value, properties.getProperty(key));

        Properties byProperty = new Properties();
        byProperty.setProperty(key, chosen);
        EngineDefaults.apply(Map.of(), byProperty);
        assertEquals(chosen, byProperty.getProperty(key));

        Properties byVariable = new Properties();
        EngineDefaults.apply(Map.of(key, chosen), byVariable);
        assertNull(byVariable.getProperty(key), "the environment's value is DJL's to read");
    }

    @ParameterizedTest
    @ValueSource(strings = {"model-path", "zoo", "local-model"})
    void loadingAModelOptsOutBeforeDjlsEngineStartsAndPicksTheCpuTokenizers(String way) throws Exception {
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb =
                new ProcessBuilder(
                        java,
                        "-Xshare:auto",
                        "-XX:TieredStopAtLevel=1",
                        "-Dai.djl.pytorch.num_threads=1",
                        "-cp",
                        System.getProperty("java.class.path"),
                        EngineDefaultsProbe.class.getName(),
                        way,
                        GPT2_TINY.toString());
        // Neither DJL's switch nor its offline mode (which also skips the check) comes from outside.
        pb.environment().remove("OPT_OUT_TRACKING");
        pb.environment().remove("DJL_OFFLINE");
        pb.environment().remove("RUST_FLAVOR");
        pb.redirectErrorStream(true);
        Process process = pb.start();
        String output = readAll(process);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), way);
        assertEquals(0, process.exitValue(), output);
        String[] lines = output.strip().split("\n");
        assertEquals("true 0 cpu", lines[lines.length - 1], output);
    }

    private static String readAll(Process process) throws IOException {
        return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
}
