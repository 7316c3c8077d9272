package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertFalse;

import ai.djl.util.cuda.CudaUtils;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The test JVMs' logging (the surefire configuration of the parent pom) stays quiet. */
class TestLoggingTest {

    @Test
    void djlsWarningThatItFoundNoGpuDoesNotReachTheTestOutput() {
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream err = System.err;
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            CudaUtils.getGpuCount(); // on a machine without a GPU (or CUDA driver), DJL logs a warning
        } finally {
            System.setErr(err);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        assertFalse(log.contains("GPU count"), log);
    }
}
