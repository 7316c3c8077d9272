package io.github.djlllmzoo.server;

import static io.github.djlllmzoo.server.TestHttp.CLIENT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.zoo.LocalModel;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A request past the server's request timeout: a streamed answer ends cleanly with {@code
 * finish_reason "length"}, a whole one gets 408, and its slot and row are freed. The requests ask
 * for thousands of tokens, which take many times the timeout (each decode step costs at least a
 * few dozen native calls), so only the timeout can end them early.
 */
class RequestTimeoutTest {

    private static final int WINDOW = 4096;
    private static final int MAX_TOKENS = WINDOW - 16;
    private static final Duration TIMEOUT = Duration.ofMillis(200);

    @TempDir static Path dir;

    private static LocalModel model;
    private static OpenAiServer server;

    @BeforeAll
    static void start() throws Exception {
        model = TinyModels.randomGpt2(dir, WINDOW);
        server =
                OpenAiServer.start(
                        model,
                        ServerOptions.DEFAULTS
                                .withAddress("127.0.0.1", 0)
                                .withScheduling(2, 2, Duration.ZERO)
                                .withTimeouts(TIMEOUT, Duration.ZERO));
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
        if (model != null) {
            model.close();
        }
    }

    private static HttpResponse<String> post(String path, String body) throws Exception {
        return CLIENT.send(TestHttp.post(server, path, body), HttpResponse.BodyHandlers.ofString());
    }

    private static Map<String, Double> metrics() throws Exception {
        return MetricsTest.scrape(server);
    }

    @Test
    void aStreamPastTheTimeoutEndsWithFinishReasonLengthUsageAndDone() throws Exception {
        double timedOut = metrics().get("llmzoo_requests_total{outcome=\"timed_out\"}");
        HttpResponse<String> response =
                post(
                        "/v1/completions",
                        "{\"prompt\": \"A long story:\", \"max_tokens\": "
                                + MAX_TOKENS
                                + ", \"ignore_eos\": true, \"n\": 2, \"stream\": true,"
                                + " \"stream_options\": {\"include_usage\": true}}");
        assertEquals(200, response.statusCode());
        assertTrue(response.body().endsWith("data: [DONE]\n\n"), response.body());
        List<JsonObject> chunks = new ArrayList<>();
        for (String line : response.body().split("\n")) {
            if (line.startsWith("data: {")) {
                chunks.add(JsonParser.parseString(line.substring(6)).getAsJsonObject());
            }
        }
        int[] ends = new int[2];
        for (JsonObject chunk : chunks.subList(0, chunks.size() - 1)) {
            JsonObject choice = chunk.getAsJsonArray("choices").get(0).getAsJsonObject();
            if (!choice.get("finish_reason").isJsonNull()) {
                assertEquals("length", choice.get("finish_reason").getAsString());
                ends[choice.get("index").getAsInt()]++;
            }
        }
        assertEquals(1, ends[0]);
        assertEquals(1, ends[1]);
        int completionTokens =
                chunks.get(chunks.size() - 1).getAsJsonObject("usage").get("completion_tokens").getAsInt();
        assertTrue(completionTokens < 2 * MAX_TOKENS, "cut short by the timeout: " + completionTokens);
        Map<String, Double> after = metrics();
        assertEquals(timedOut + 1, after.get("llmzoo_requests_total{outcome=\"timed_out\"}"));
        assertEquals(0.0, after.get("llmzoo_active_requests"));
    }

    @Test
    void aWholeAnswerPastTheTimeoutIs408AndItsRowStops() throws Exception {
        HttpResponse<String> response =
                post(
                        "/v1/completions",
                        "{\"prompt\": \"A long story:\", \"max_tokens\": " + MAX_TOKENS + ", \"ignore_eos\": true}");
        assertEquals(408, response.statusCode(), response.body());
        JsonObject error = JsonParser.parseString(response.body()).getAsJsonObject().getAsJsonObject("error");
        assertEquals("request_timeout", error.get("code").getAsString());
        assertTrue(error.get("message").getAsString().contains("request timeout"), error.toString());
        // the worker stops the timed-out row at its next step, thousands of tokens early: the
        // generated tokens stop growing (they would for seconds more, a token every few ms)
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        double generated = metrics().get("llmzoo_generation_tokens_total");
        double previous = -1;
        while (generated != previous && System.nanoTime() < deadline) {
            Thread.sleep(300);
            previous = generated;
            generated = metrics().get("llmzoo_generation_tokens_total");
        }
        assertEquals(previous, generated, "generation stopped");
        assertEquals(0.0, metrics().get("llmzoo_active_requests"));
    }
}
