package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.benchmarks.StreamingLoadTest;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** scripts/load-openai.sh's client against this server, a few clients on a tiny model. */
class LoadClientTest {

    @Test
    void clientsLeavingAtRandomLeaveEveryAdmittedRequestEndedCleanly(@TempDir Path dir) throws Exception {
        try (LocalModel model = TinyModels.randomGpt2(dir, 1024);
                OpenAiServer server =
                        OpenAiServer.start(
                                model,
                                ServerOptions.DEFAULTS
                                        .withAddress("127.0.0.1", 0)
                                        .withScheduling(8, 4, Duration.ofMillis(5))
                                        .withApiKeys(List.of("load-key")))) {
            StreamingLoadTest load = new StreamingLoadTest(server.uri(), server.modelId(), "load-key");
            StreamingLoadTest.Report report = load.run(3, 3, 1, 0.5);
            assertTrue(report.clean(), report.describe());
            assertEquals(9, report.admitted(), report.describe());
            assertTrue(report.disconnected() > 0, report.describe());
            assertEquals(report.admitted() - report.disconnected(), report.ttftSeconds().length, report.describe());
            assertTrue(report.serverCheck().startsWith("ok: "), report.describe());
            assertTrue(report.tokens() >= 16L * (report.admitted() - report.disconnected()), report.describe());
        }
    }
}
