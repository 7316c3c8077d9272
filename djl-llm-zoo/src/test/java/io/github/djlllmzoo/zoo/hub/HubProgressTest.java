package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HubProgressTest {

    @TempDir Path cache;
    private FakeHub hub;
    private final ByteArrayOutputStream sink = new ByteArrayOutputStream();

    @BeforeEach
    void start() throws Exception {
        hub = new FakeHub();
        HubFixtures.tinyGpt2(hub, "org/progress", 3 * 1024 * 1024);
    }

    @AfterEach
    void stop() {
        hub.close();
    }

    private HubClient client(boolean progressBars) {
        HubConfig config =
                HubFixtures.config(hub, cache)
                        .progressBars(progressBars)
                        .progressThreshold(1024 * 1024)
                        .build();
        return new HubClient(config, new PrintStream(sink, true, StandardCharsets.UTF_8));
    }

    @Test
    void fileOverTheThresholdDrawsAProgressBarOnTheSinkAndSmallFilesDoNot() throws Exception {
        hub.chunkDelayMillis = 10;
        PrintStream stdout = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            client(true).snapshot("org/progress");
        } finally {
            System.setOut(stdout);
        }

        String out = sink.toString(StandardCharsets.UTF_8);
        assertTrue(out.startsWith("\rmodel.safetensors  "), out);
        assertTrue(out.contains("3.0/3.0 MB  100%"), out);
        assertTrue(out.contains(" MB/s"), out);
        assertTrue(out.endsWith(System.lineSeparator()), out);
        assertEquals(1, out.chars().filter(c -> c == '\n').count(), "one line: " + out);
        long redraws = out.chars().filter(c -> c == '\r').count();
        assertTrue(redraws >= 2 && redraws <= 12, "throttled redraws: " + redraws);
        assertFalse(out.contains("config.json"), out);
        assertFalse(out.contains("tokenizer"), out);
        assertEquals("", captured.toString(StandardCharsets.UTF_8), "nothing on stdout");
    }

    @Test
    void disabledProgressBarsPrintNothing() throws Exception {
        client(false).snapshot("org/progress");

        assertEquals(0, sink.size());
    }
}
