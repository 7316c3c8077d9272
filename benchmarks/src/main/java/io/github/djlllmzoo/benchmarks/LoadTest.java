package io.github.djlllmzoo.benchmarks;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A closed-loop load generator for an OpenAI-compatible server: for each concurrency level, that
 * many clients each send a fixed number of {@code /v1/completions} requests one after another
 * (greedy, {@code ignore_eos}, so every answer has exactly {@code max_tokens} tokens), and it
 * reports requests/s, generated tokens/s, latency percentiles and, from {@code /health}, the mean
 * batch the server formed. The work is bounded: levels × clients × requests per client.
 *
 * <p>Run as {@code LoadTest URL [--clients 1,8,32] [--requests-per-client K] [--max-tokens T]
 * [--wait-seconds S]}; {@code scripts/load-test.sh} starts a server and runs it.
 */
public final class LoadTest {

    private final URI base;
    private final HttpClient client;
    private final int maxTokens;

    private LoadTest(URI base, int maxTokens) {
        this.base = base;
        this.maxTokens = maxTokens;
        this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    }

    /**
     * The figures of one concurrency level.
     *
     * @param clients concurrent clients
     * @param requests requests answered
     * @param rejected requests refused with 429
     * @param seconds wall time of the level
     * @param tokens completion tokens over all answers
     * @param p50Millis median latency
     * @param p95Millis 95th percentile latency
     * @param meanBatch requests per batch the server formed
     */
    public record Level(
            int clients,
            int requests,
            int rejected,
            double seconds,
            long tokens,
            double p50Millis,
            double p95Millis,
            double meanBatch) {

        /** @return answered requests per second */
        public double requestsPerSecond() {
            return requests / seconds;
        }

        /** @return generated tokens per second */
        public double tokensPerSecond() {
            return tokens / seconds;
        }
    }

    /**
     * Runs one concurrency level.
     *
     * @param clients concurrent clients
     * @param requestsPerClient requests each client sends, one after another
     * @return the figures
     * @throws Exception if a request fails other than with 429
     */
    public Level run(int clients, int requestsPerClient) throws Exception {
        JsonObject before = health();
        AtomicInteger rejected = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        List<Future<List<long[]>>> results = new ArrayList<>();
        long start = System.nanoTime();
        try {
            for (int c = 0; c < clients; c++) {
                int id = c;
                results.add(
                        pool.submit(
                                () -> {
                                    List<long[]> out = new ArrayList<>();
                                    for (int r = 0; r < requestsPerClient; r++) {
                                        long sent = System.nanoTime();
                                        long tokens =
                                                complete(
                                                        "Client "
                                                                + id
                                                                + ", request "
                                                                + r
                                                                + ": once upon a time",
                                                        rejected);
                                        out.add(new long[] {System.nanoTime() - sent, tokens});
                                    }
                                    return out;
                                }));
            }
            List<long[]> all = new ArrayList<>();
            for (Future<List<long[]>> result : results) {
                all.addAll(result.get());
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            JsonObject after = health();
            long[] latencies = all.stream().mapToLong(x -> x[0]).sorted().toArray();
            long tokens = all.stream().mapToLong(x -> x[1]).sum();
            long batches = after.get("batches").getAsLong() - before.get("batches").getAsLong();
            long batched =
                    after.get("batched_requests").getAsLong()
                            - before.get("batched_requests").getAsLong();
            return new Level(
                    clients,
                    all.size(),
                    rejected.get(),
                    seconds,
                    tokens,
                    percentile(latencies, 0.50) / 1e6,
                    percentile(latencies, 0.95) / 1e6,
                    batches == 0 ? 0 : (double) batched / batches);
        } finally {
            pool.shutdownNow();
        }
    }

    private static long percentile(long[] sorted, double p) {
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1)];
    }

    /** Sends one request, retrying after a 429 as told; returns its completion tokens. */
    private long complete(String prompt, AtomicInteger rejected)
            throws IOException, InterruptedException {
        JsonObject body = new JsonObject();
        body.addProperty("prompt", prompt);
        body.addProperty("max_tokens", maxTokens);
        body.addProperty("temperature", 0);
        body.addProperty("ignore_eos", true);
        HttpRequest request =
                HttpRequest.newBuilder(base.resolve("/v1/completions"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                        .build();
        while (true) {
            HttpResponse<String> response =
                    client.send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() == 429) {
                rejected.incrementAndGet();
                Thread.sleep(
                        1000L
                                * Long.parseLong(
                                        response.headers().firstValue("Retry-After").orElse("1")));
                continue;
            }
            if (response.statusCode() != 200) {
                throw new IOException("HTTP " + response.statusCode() + ": " + response.body());
            }
            return JsonParser.parseString(response.body())
                    .getAsJsonObject()
                    .getAsJsonObject("usage")
                    .get("completion_tokens")
                    .getAsLong();
        }
    }

    private JsonObject health() throws IOException, InterruptedException {
        HttpResponse<String> response =
                client.send(
                        HttpRequest.newBuilder(base.resolve("/health")).build(),
                        HttpResponse.BodyHandlers.ofString());
        return JsonParser.parseString(response.body()).getAsJsonObject();
    }

    private void awaitServer(int seconds) throws InterruptedException, IOException {
        long deadline = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
        while (true) {
            try {
                health();
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    throw new IOException(
                            "no server answered at " + base + " within " + seconds + " s", e);
                }
                Thread.sleep(250);
            }
        }
    }

    /**
     * Runs the levels and prints a table.
     *
     * @param args {@code URL [--clients 1,8,32] [--requests-per-client K] [--max-tokens T]
     *     [--wait-seconds S]}
     * @throws Exception if the server cannot be reached or a request fails
     */
    public static void main(String[] args) throws Exception {
        BenchmarkArgs options =
                BenchmarkArgs.command("LoadTest")
                        .positional("URL")
                        .option("--clients", "N[,N...]", "1,8,32")
                        .option("--requests-per-client", "K", "2")
                        .option("--max-tokens", "T", "32")
                        .option("--wait-seconds", "S", "120")
                        .parseOrExit(args);
        int[] levels = options.integers("--clients");
        int perClient = options.integer("--requests-per-client");
        int maxTokens = options.integer("--max-tokens");
        int wait = options.integer("--wait-seconds");
        LoadTest test = new LoadTest(options.value("URL", URI::create), maxTokens);
        test.awaitServer(wait);
        test.run(1, 1); // warm-up, not reported
        System.out.printf(
                Locale.ROOT, "max_tokens=%d, requests per client=%d%n", maxTokens, perClient);
        System.out.printf(
                Locale.ROOT,
                "%8s %9s %9s %8s %9s %10s %10s %10s %9s%n",
                "clients",
                "requests",
                "rejected",
                "wall_s",
                "req/s",
                "tokens/s",
                "p50_ms",
                "p95_ms",
                "batch");
        for (int clients : levels) {
            Level level = test.run(clients, perClient);
            System.out.printf(
                    Locale.ROOT,
                    "%8d %9d %9d %8.2f %9.2f %10.1f %10.0f %10.0f %9.2f%n",
                    level.clients(),
                    level.requests(),
                    level.rejected(),
                    level.seconds(),
                    level.requestsPerSecond(),
                    level.tokensPerSecond(),
                    level.p50Millis(),
                    level.p95Millis(),
                    level.meanBatch());
        }
    }
}
