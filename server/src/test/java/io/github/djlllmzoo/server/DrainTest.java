package io.github.djlllmzoo.server;

import static io.github.djlllmzoo.server.TestHttp.CLIENT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A graceful stop: a draining server refuses new requests and lets the running ones finish. */
class DrainTest {

    private static final int MAX_TOKENS = 150;

    @TempDir static Path dir;

    private static LocalModel model;

    @BeforeAll
    static void load() throws Exception {
        model = TinyModels.randomGpt2(dir, 512);
    }

    @AfterAll
    static void close() {
        if (model != null) {
            model.close();
        }
    }

    private static HttpRequest completion(OpenAiServer server, boolean stream) {
        return TestHttp.completion(server, MAX_TOKENS, stream);
    }

    @Test
    void aDrainingServerRefusesNewRequestsWith503AndFinishesTheRunningOnes() throws Exception {
        try (OpenAiServer server =
                OpenAiServer.start(
                        model,
                        ServerOptions.DEFAULTS
                                .withAddress("127.0.0.1", 0)
                                .withScheduling(4, 2, Duration.ZERO))) {
            HttpResponse<InputStream> running =
                    CLIENT.send(completion(server, true), HttpResponse.BodyHandlers.ofInputStream());
            assertEquals('d', running.body().read(), "the stream started");

            // the stream has hundreds of tokens to go: not drained at once
            assertFalse(server.drain(Duration.ZERO));
            HttpResponse<String> refused =
                    CLIENT.send(completion(server, false), HttpResponse.BodyHandlers.ofString());
            assertEquals(503, refused.statusCode(), refused.body());
            assertEquals(
                    "server_error",
                    JsonParser.parseString(refused.body()).getAsJsonObject().getAsJsonObject("error").get("type").getAsString());
            HttpResponse<String> health =
                    CLIENT.send(
                            HttpRequest.newBuilder(server.uri().resolve("/health")).build(),
                            HttpResponse.BodyHandlers.ofString());
            assertEquals(503, health.statusCode());
            assertEquals("draining", JsonParser.parseString(health.body()).getAsJsonObject().get("status").getAsString());
            assertTrue(MetricsTest.scrape(server).get("llmzoo_requests_total{outcome=\"unavailable\"}") >= 1);

            assertTrue(server.drain(Duration.ofSeconds(60)), "the running stream finished");
            String rest = new String(running.body().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(rest.endsWith("data: [DONE]\n\n"), rest);
            String[] lines = rest.strip().split("\n\n");
            JsonObject usage =
                    JsonParser.parseString(lines[lines.length - 2].substring("data: ".length()))
                            .getAsJsonObject()
                            .getAsJsonObject("usage");
            assertEquals(MAX_TOKENS, usage.get("completion_tokens").getAsInt(), "the whole answer");
            assertEquals(1, server.stats().completed());
        }
    }

    @Test
    void shutdownCancelsWhatRunsPastTheDrainTimeout() throws Exception {
        OpenAiServer server =
                OpenAiServer.start(
                        model,
                        ServerOptions.DEFAULTS
                                .withAddress("127.0.0.1", 0)
                                .withScheduling(4, 2, Duration.ZERO)
                                .withTimeouts(Duration.ofMinutes(1), Duration.ZERO));
        HttpResponse<InputStream> running =
                CLIENT.send(completion(server, true), HttpResponse.BodyHandlers.ofInputStream());
        assertEquals('d', running.body().read(), "the stream started");
        assertFalse(server.shutdown());
        String rest = new String(running.body().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(rest.contains("\"error\""), "the stream ends with an error event: " + rest);
        assertEquals(1, server.stats().cancelled());
    }
}
