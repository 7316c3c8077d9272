package io.github.djlllmzoo.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code llmzoo serve}'s command line (the server itself: {@code OpenAiServerTest}). */
class ServeCommandTest {

    private static String[] run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = LlmZoo.execute(args, new PrintWriter(out), new PrintWriter(err));
        return new String[] {String.valueOf(code), out.toString(), err.toString()};
    }

    @Test
    void invalidSchedulingOptionsAreUsageErrorsNamingTheOption(@TempDir Path dir) {
        String[] port = run("serve", "--model", dir.toString(), "--port", "70000");
        assertEquals("2", port[0]);
        assertTrue(port[2].contains("port must be in [0, 65535]"), port[2]);
        String batch = run("serve", "--model", dir.toString(), "--max-batch", "0")[2];
        assertTrue(batch.contains("maxBatch must be at least 1"), batch);
    }

    @Test
    void aPortInUseIsOneErrorLineNamingHostAndPortAndExitCode1() throws IOException {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            String port = String.valueOf(taken.getLocalPort());
            String[] run = run("serve", "--host", "127.0.0.1", "--port", port);
            assertEquals("1", run[0], run[2]);
            String error = run[2].strip();
            assertTrue(
                    error.startsWith("error: cannot listen on 127.0.0.1:" + port + ": "), error);
            assertTrue(error.contains("already in use"), error);
            assertEquals(1, error.lines().count(), error);
        }
    }

    @Test
    void helpListsTheServerOptions() {
        String[] help = run("serve", "--help");
        assertEquals("0", help[0]);
        for (String option :
                new String[] {
                    "--model", "--host", "--port", "--max-concurrency", "--max-batch", "--workers"
                }) {
            assertTrue(help[1].contains(option), option);
        }
    }
}
