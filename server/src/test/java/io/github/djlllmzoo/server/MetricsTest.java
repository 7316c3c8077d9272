package io.github.djlllmzoo.server;

import static io.github.djlllmzoo.server.TestHttp.CLIENT;
import static io.github.djlllmzoo.server.TestHttp.completion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code /metrics}: the Prometheus text format, and values that follow the requests served. */
class MetricsTest {

    /** A sample line: a name, optional labels, a number. */
    private static final Pattern SAMPLE =
            Pattern.compile("([a-z_]+)(\\{[a-z]+=\"[^\"]*\"\\})? (-?[0-9.eE+-]+|\\+Inf|NaN)");

    @TempDir static Path dir;

    private static LocalModel model;

    @BeforeAll
    static void load() throws Exception {
        model = TinyModels.randomGpt2(dir, 4096);
    }

    @AfterAll
    static void close() {
        if (model != null) {
            model.close();
        }
    }

    private static OpenAiServer start(int maxConcurrency) throws Exception {
        return OpenAiServer.start(
                model,
                ServerOptions.DEFAULTS
                        .withAddress("127.0.0.1", 0)
                        .withScheduling(maxConcurrency, 1, Duration.ZERO));
    }

    /** The page's samples by name and labels, checking every line's syntax and metadata. */
    static Map<String, Double> scrape(OpenAiServer server) throws Exception {
        HttpResponse<String> response =
                CLIENT.send(
                        HttpRequest.newBuilder(server.uri().resolve("/metrics")).build(),
                        HttpResponse.BodyHandlers.ofString());
        assertEquals(200, response.statusCode());
        assertEquals(
                "text/plain; version=0.0.4; charset=utf-8",
                response.headers().firstValue("Content-Type").orElse(""));
        Map<String, Double> samples = new LinkedHashMap<>();
        Set<String> typed = new HashSet<>();
        Set<String> helped = new HashSet<>();
        for (String line : response.body().split("\n")) {
            if (line.startsWith("# HELP ")) {
                helped.add(line.split(" ")[2]);
            } else if (line.startsWith("# TYPE ")) {
                String[] parts = line.split(" ");
                assertTrue(Set.of("counter", "gauge", "histogram").contains(parts[3]), line);
                typed.add(parts[2]);
            } else {
                Matcher m = SAMPLE.matcher(line);
                assertTrue(m.matches(), "not a sample line: " + line);
                String family = m.group(1).replaceAll("_(bucket|sum|count)$", "");
                assertTrue(
                        typed.contains(m.group(1)) || typed.contains(family),
                        "no # TYPE before " + line);
                assertTrue(helped.contains(m.group(1)) || helped.contains(family), line);
                String key = m.group(1) + (m.group(2) == null ? "" : m.group(2));
                assertEquals(null, samples.put(key, Double.parseDouble(m.group(3).replace("+Inf", "Infinity"))), key);
            }
        }
        return samples;
    }

    /** Checks a histogram's buckets are cumulative and end with its count; returns the count. */
    private static double histogramCount(Map<String, Double> samples, String name) {
        double previous = 0;
        for (Map.Entry<String, Double> e : samples.entrySet()) {
            if (e.getKey().startsWith(name + "_bucket{")) {
                assertTrue(e.getValue() >= previous, e.getKey());
                previous = e.getValue();
            }
        }
        assertEquals(previous, samples.get(name + "_bucket{le=\"+Inf\"}"));
        assertEquals(previous, samples.get(name + "_count"));
        return previous;
    }

    @Test
    void countersAndHistogramsFollowTheRequestsServed() throws Exception {
        try (OpenAiServer server = start(4)) {
            Map<String, Double> before = scrape(server);
            assertEquals(0.0, before.get("llmzoo_requests_total{outcome=\"completed\"}"));
            assertEquals(0.0, histogramCount(before, "llmzoo_time_to_first_token_seconds"));
            int maxTokens = 5;
            JsonObject whole =
                    JsonParser.parseString(
                                    CLIENT.send(completion(server, maxTokens, false), HttpResponse.BodyHandlers.ofString()).body())
                            .getAsJsonObject();
            String streamed =
                    CLIENT.send(completion(server, maxTokens, true), HttpResponse.BodyHandlers.ofString()).body();
            assertTrue(streamed.endsWith("data: [DONE]\n\n"), streamed);
            int promptTokens = whole.getAsJsonObject("usage").get("prompt_tokens").getAsInt();

            Map<String, Double> after = scrape(server);
            assertEquals(2.0, after.get("llmzoo_requests_total{outcome=\"completed\"}"));
            assertEquals(0.0, after.get("llmzoo_requests_total{outcome=\"rejected\"}"));
            assertEquals(2.0 * promptTokens, after.get("llmzoo_prompt_tokens_total"));
            assertEquals(2.0 * maxTokens, after.get("llmzoo_generation_tokens_total"));
            assertEquals(2.0, histogramCount(after, "llmzoo_time_to_first_token_seconds"));
            assertEquals(2.0, histogramCount(after, "llmzoo_time_per_output_token_seconds"));
            assertEquals(2.0, histogramCount(after, "llmzoo_request_duration_seconds"));
            // each request's duration holds its first token's wait and its further tokens' times
            assertTrue(
                    after.get("llmzoo_request_duration_seconds_sum")
                            >= after.get("llmzoo_time_to_first_token_seconds_sum")
                                    + (maxTokens - 1) * after.get("llmzoo_time_per_output_token_seconds_sum") - 1e-6,
                    after.toString());
            assertEquals(0.0, after.get("llmzoo_active_requests"));
            assertEquals(0.0, after.get("llmzoo_running_rows"));
            assertEquals(4.0, after.get("llmzoo_max_concurrent_requests"));
            assertEquals(2.0, after.get("llmzoo_batches_total"));
        }
    }

    @Test
    void everyMetricOnThePageIsDocumentedWithItsTypeAndNoOtherIs() throws Exception {
        Path doc = Paths.get("..", "docs", "serving-production.md");
        Map<String, String> documented = new TreeMap<>();
        Matcher row = Pattern.compile("(?m)^\\| `(llmzoo_[a-z_]+)` \\| (counter|gauge|histogram) \\|").matcher(Files.readString(doc));
        while (row.find()) {
            documented.put(row.group(1), row.group(2));
        }
        Map<String, String> exposed = new TreeMap<>();
        try (OpenAiServer server = start(1)) {
            String page =
                    CLIENT.send(
                                    HttpRequest.newBuilder(server.uri().resolve("/metrics")).build(),
                                    HttpResponse.BodyHandlers.ofString())
                            .body();
            for (String line : page.split("\n")) {
                if (line.startsWith("# TYPE ")) {
                    String[] parts = line.split(" ");
                    exposed.put(parts[2], parts[3]);
                }
            }
        }
        assertEquals(exposed, documented, doc.toString());
    }

    @Test
    void gaugesShowTheRunningAndQueuedRequestsAndRefusalsAreCounted() throws Exception {
        try (OpenAiServer server = start(2)) {
            HttpResponse<InputStream> running =
                    CLIENT.send(completion(server, 4000, true), HttpResponse.BodyHandlers.ofInputStream());
            assertEquals('d', running.body().read(), "the stream started");
            var queued = CLIENT.sendAsync(completion(server, 2, false), HttpResponse.BodyHandlers.ofString());
            Map<String, Double> busy = new HashMap<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (!Double.valueOf(1).equals(busy.get("llmzoo_queued_requests")) && System.nanoTime() < deadline) {
                busy = scrape(server);
            }
            assertEquals(2.0, busy.get("llmzoo_active_requests"), busy.toString());
            assertEquals(1.0, busy.get("llmzoo_queued_requests"), busy.toString());
            assertEquals(1.0, busy.get("llmzoo_running_rows"), busy.toString());
            // the running row holds its prompt and the tokens so far, within its reservation
            assertTrue(busy.get("llmzoo_kv_pool_held_tokens") > 0, busy.toString());
            assertTrue(busy.get("llmzoo_kv_pool_held_tokens") <= busy.get("llmzoo_kv_pool_tokens"), busy.toString());
            assertEquals(429, CLIENT.send(completion(server, 2, false), HttpResponse.BodyHandlers.ofString()).statusCode());
            running.body().close();
            assertEquals(200, queued.get().statusCode());
            Map<String, Double> after = scrape(server);
            assertEquals(1.0, after.get("llmzoo_requests_total{outcome=\"rejected\"}"));
            assertEquals(1.0, after.get("llmzoo_requests_total{outcome=\"cancelled\"}"));
            assertEquals(1.0, after.get("llmzoo_requests_total{outcome=\"completed\"}"));
            assertEquals(0.0, after.get("llmzoo_running_rows"));
            // as of the decode loop's last step, which ends just after the answer is handed over
            Map<String, Double> idle = after;
            for (long end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                    idle.get("llmzoo_kv_pool_held_tokens") > 0 && System.nanoTime() < end; ) {
                idle = scrape(server);
            }
            assertEquals(0.0, idle.get("llmzoo_kv_pool_held_tokens"), "the rows that left hold nothing");
        }
    }
}
