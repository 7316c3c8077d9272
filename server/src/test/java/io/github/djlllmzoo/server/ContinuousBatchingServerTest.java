package io.github.djlllmzoo.server;

import static io.github.djlllmzoo.server.TestHttp.CLIENT;
import static io.github.djlllmzoo.server.TestHttp.completion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server's decode loop: a request joins the batch of a stream already running, at the next step,
 * and ends before it; the KV pool's budget refuses a request that could never fit with a 400 naming
 * {@code max_tokens}, and {@code /metrics} shows the pool; a request repeating an earlier prompt
 * reuses its keys and values (a prefix-cache hit in {@code /metrics}) and answers the same.
 */
class ContinuousBatchingServerTest {

    private static final int WINDOW = 256;

    @TempDir static Path dir;

    private static LocalModel model;

    @BeforeAll
    static void load() throws Exception {
        model = TinyModels.randomGpt2(dir, WINDOW);
    }

    @AfterAll
    static void close() {
        if (model != null) {
            model.close();
        }
    }

    @Test
    void aRequestJoinsARunningStreamsBatchAndEndsBeforeIt() throws Exception {
        try (OpenAiServer server = OpenAiServer.start(
                model,
                ServerOptions.DEFAULTS.withAddress("127.0.0.1", 0).withScheduling(4, 2, Duration.ZERO))) {
            HttpResponse<InputStream> stream =
                    CLIENT.send(completion(server, WINDOW - 16, true), HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, stream.statusCode());
            try (BufferedReader lines =
                    new BufferedReader(new InputStreamReader(stream.body(), StandardCharsets.UTF_8))) {
                assertTrue(lines.readLine().startsWith("data: "), "the stream has its first token");
                HttpResponse<String> shorter =
                        CLIENT.send(completion(server, 3, false), HttpResponse.BodyHandlers.ofString());
                assertEquals(200, shorter.statusCode(), shorter.body());
                assertEquals(1, server.stats().completed(), "the short request ended first");
                String line;
                String last = null;
                while ((line = lines.readLine()) != null) {
                    last = line.isEmpty() ? last : line;
                }
                assertEquals("data: [DONE]", last);
            }
            GenerationScheduler.Stats stats = server.stats();
            assertEquals(2, stats.completed());
            assertEquals(1, stats.batches(), "the short request joined the stream's batch: " + stats);
            assertEquals(2, stats.batchedJobs());
        }
    }

    @Test
    void aRequestRepeatingAnEarlierPromptReusesItsKeysAndValuesAndAnswersTheSame() throws Exception {
        String body = "{\"prompt\": \"Once upon a time there was a\", \"max_tokens\": 12, \"temperature\": 0,"
                + " \"ignore_eos\": true}";
        int chunk = 2; // a prompt is reused in whole prefill chunks
        try (OpenAiServer server = OpenAiServer.start(
                model,
                ServerOptions.DEFAULTS.withAddress("127.0.0.1", 0).withScheduling(4, 2, Duration.ZERO)
                        .withKvPool(0, chunk))) {
            JsonObject cold = answer(server, body);
            JsonObject warm = answer(server, body);
            assertEquals(text(cold), text(warm));
            int promptTokens = cold.getAsJsonObject("usage").get("prompt_tokens").getAsInt();
            Map<String, Double> samples = MetricsTest.scrape(server);
            assertEquals(2.0, samples.get("llmzoo_prefix_cache_lookups_total"));
            assertEquals(1.0, samples.get("llmzoo_prefix_cache_hits_total"));
            assertEquals((double) ((promptTokens - 1) / chunk * chunk),
                    samples.get("llmzoo_prefix_cache_reused_tokens_total"),
                    "the whole chunks before the last prompt token");
            assertEquals((double) promptTokens, samples.get("llmzoo_prefix_cache_tokens"));
            assertEquals(2.0 * WINDOW / 4, samples.get("llmzoo_prefix_cache_budget_tokens"),
                    "a quarter of the default pool of 2 rows of the context window");
        }
        try (OpenAiServer off = OpenAiServer.start(
                model,
                ServerOptions.DEFAULTS
                        .withAddress("127.0.0.1", 0)
                        .withScheduling(4, 2, Duration.ZERO)
                        .withPrefixCache(0))) {
            answer(off, body);
            answer(off, body);
            Map<String, Double> samples = MetricsTest.scrape(off);
            assertEquals(0.0, samples.get("llmzoo_prefix_cache_hits_total"));
            assertEquals(0.0, samples.get("llmzoo_prefix_cache_tokens"));
        }
    }

    private static JsonObject answer(OpenAiServer server, String body) throws Exception {
        HttpResponse<String> response =
                CLIENT.send(TestHttp.post(server, "/v1/completions", body), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, response.statusCode(), response.body());
        return JsonParser.parseString(response.body()).getAsJsonObject();
    }

    private static String text(JsonObject answer) {
        return answer.getAsJsonArray("choices").get(0).getAsJsonObject().get("text").getAsString();
    }

    @Test
    void aRequestThatCouldNeverFitTheKvPoolGets400NamingMaxTokens() throws Exception {
        try (OpenAiServer server = OpenAiServer.start(
                model,
                ServerOptions.DEFAULTS
                        .withAddress("127.0.0.1", 0)
                        .withScheduling(4, 2, Duration.ZERO)
                        .withKvPool(64, 8))) {
            HttpResponse<String> tooLarge =
                    CLIENT.send(completion(server, 100, false), HttpResponse.BodyHandlers.ofString());
            assertEquals(400, tooLarge.statusCode(), tooLarge.body());
            JsonObject error = JsonParser.parseString(tooLarge.body()).getAsJsonObject().getAsJsonObject("error");
            assertEquals("max_tokens", error.get("param").getAsString());
            assertTrue(error.get("message").getAsString().contains("64"), error.toString());
            HttpResponse<String> fits = CLIENT.send(completion(server, 40, false), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, fits.statusCode(), fits.body());
            // the answer is written within the step its last token ends; the step's counters are
            // published as it returns, so a scrape may come between the two
            Map<String, Double> samples = MetricsTest.scrape(server);
            for (long deadline = System.nanoTime() + 5_000_000_000L;
                    (samples.get("llmzoo_decode_steps_total") < 39.0 || samples.get("llmzoo_decode_tokens_total") < 39.0)
                            && System.nanoTime() < deadline; ) {
                Thread.sleep(10);
                samples = MetricsTest.scrape(server);
            }
            assertEquals(64.0, samples.get("llmzoo_kv_pool_budget_tokens"));
            double pool = samples.get("llmzoo_kv_pool_tokens");
            assertTrue(pool > 40 && pool <= 64, "the pool held the request's reservation: " + pool);
            assertEquals(0.0, samples.get("llmzoo_running_rows"));
            // the prompt's step gives the first token and decodes the second; one step each after
            assertEquals(39.0, samples.get("llmzoo_decode_steps_total"));
            // the loop's own accounting: the one prompt prefilled, one row decoded a step
            assertEquals(samples.get("llmzoo_prompt_tokens_total"), samples.get("llmzoo_prefill_tokens_total"));
            assertEquals(39.0, samples.get("llmzoo_decode_tokens_total"));
            assertTrue(samples.get("llmzoo_prefill_seconds_total") > 0, samples.toString());
            assertTrue(samples.get("llmzoo_decode_seconds_total") > 0, samples.toString());
            // every pass timed once: the prompt's step's decode pass after its prefill layers, the others alone
            double plainPasses = samples.get("llmzoo_decode_pass_seconds_count");
            double afterPrefill = samples.get("llmzoo_decode_pass_after_prefill_seconds_count");
            assertEquals(39.0, plainPasses + afterPrefill, samples.toString());
            assertTrue(afterPrefill >= 1 && plainPasses >= 1, samples.toString());
            assertEquals(samples.get("llmzoo_decode_seconds_total"), samples.get("llmzoo_decode_pass_seconds_sum")
                    + samples.get("llmzoo_decode_pass_after_prefill_seconds_sum"), 1e-6);
            assertTrue(samples.get("llmzoo_prefill_step_seconds_count") >= 1, samples.toString());
            assertEquals(samples.get("llmzoo_prefill_seconds_total"), samples.get("llmzoo_prefill_step_seconds_sum"),
                    1e-6);
        }
    }
}
