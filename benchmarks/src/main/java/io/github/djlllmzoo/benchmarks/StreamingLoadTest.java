package io.github.djlllmzoo.benchmarks;

import com.google.gson.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * A closed-loop load of streaming clients for any OpenAI-compatible {@code /v1/completions}
 * endpoint (ours, llama.cpp's llama-server, vLLM): each of N clients sends its requests one after
 * another, each a seeded draw of a prompt of 8-300 words and a {@code max_tokens} of 16-128
 * (greedy, {@code ignore_eos}, so every server generates the same number of tokens), and reads
 * the answer as server-sent events. The same seed gives every server the same requests.
 *
 * <p>It reports throughput (generated tokens/s), time to first token p50/p90/p99 and time per
 * output token (after the first, per answer) p50/p90/p99, as the client sees them. With {@code
 * --disconnect P} a drawn share P of the requests is left by its client after a random number of
 * chunks; every other admitted request must end cleanly ({@code finish_reason}, {@code [DONE]}, no
 * error event), and, on a server with our {@code /metrics}, every admitted request must end there
 * as completed or cancelled (none failed, none left holding a slot). The exit status is 1 when a
 * check fails.
 *
 * <p>Run as {@code StreamingLoadTest URL [--clients N] [--requests-per-client K] [--seed S]
 * [--model NAME] [--api-key KEY] [--disconnect P]}; {@code scripts/load-openai.sh} runs it.
 */
public final class StreamingLoadTest {

    /** The prompts' words, drawn at random: plain English words, a few tokens each at most. */
    private static final String[] WORDS = (
            "the of and to in is was he for it with as his on be at by had are but from or have"
                    + " an they which one you were her all she there would their we him been has when"
                    + " who will more no if out so said what up its about into than them can only other"
                    + " new some could time these two may then do first any my now such like our over"
                    + " man me even most made after also did many before must through back years where"
                    + " much your way well down should because each just those people how too little"
                    + " state good very make world still own see men work long get here between both"
                    + " life being under never day same another know while last might us great old year"
                    + " off come since against go came right used take three house river garden story"
                    + " morning light water small city road window friend letter music summer winter")
            .split(" ");

    /** Fewest and most prompt words, fewest and most tokens asked for, as the mix. */
    static final int MIN_WORDS = 8;
    static final int MAX_WORDS = 300;
    static final int MIN_TOKENS = 16;
    static final int MAX_TOKENS = 128;

    private final URI base;
    private final String model;
    private final String apiKey;
    private final HttpClient client =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();

    /**
     * @param base the server's base address, e.g. {@code http://127.0.0.1:8080}
     * @param model the {@code model} to send, or {@code null} to send none
     * @param apiKey the bearer key to send, or {@code null}
     */
    public StreamingLoadTest(URI base, String model, String apiKey) {
        this.base = base;
        this.model = model;
        this.apiKey = apiKey;
    }

    /**
     * What a run measured.
     *
     * @param clients concurrent clients
     * @param admitted requests answered with 200
     * @param rejected requests refused with 429
     * @param errors requests refused otherwise, or whose stream did not end cleanly
     * @param disconnected requests the client left on purpose
     * @param seconds wall time
     * @param tokens completion tokens of the complete answers
     * @param ttftSeconds time to first token of each complete answer, sorted
     * @param tpotSeconds time per output token of each complete answer with 2 tokens or more, sorted
     * @param problems what went wrong, one line each (at most a few)
     * @param serverCheck the server-side check's verdict, or {@code null} without our metrics
     * @param loopTime where the server's decode loop spent the load's wall time, or {@code null}
     *     without our metrics
     */
    public record Report(
            int clients,
            int admitted,
            int rejected,
            int errors,
            int disconnected,
            double seconds,
            long tokens,
            double[] ttftSeconds,
            double[] tpotSeconds,
            List<String> problems,
            String serverCheck,
            String loopTime) {

        /** @return whether every admitted request ended cleanly, as seen by client and server */
        public boolean clean() {
            return errors == 0 && (serverCheck == null || serverCheck.startsWith("ok"));
        }

        /** @return the report, as printed */
        public String describe() {
            StringBuilder out = new StringBuilder();
            out.append(String.format(Locale.ROOT,
                    "clients %d: %d admitted (%d left on purpose), %d rejected (429), %d errors, %.1f s%n",
                    clients, admitted, disconnected, rejected, errors, seconds));
            out.append(String.format(Locale.ROOT, "throughput: %.1f generated tokens/s, %.2f answers/s%n",
                    tokens / seconds, (admitted - disconnected) / seconds));
            out.append(String.format(Locale.ROOT, "time to first token: p50 %.3f s, p90 %.3f s, p99 %.3f s%n",
                    percentile(ttftSeconds, 0.50), percentile(ttftSeconds, 0.90), percentile(ttftSeconds, 0.99)));
            out.append(String.format(Locale.ROOT, "time per output token: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms%n",
                    1e3 * percentile(tpotSeconds, 0.50), 1e3 * percentile(tpotSeconds, 0.90), 1e3 * percentile(tpotSeconds, 0.99)));
            for (String problem : problems) {
                out.append("problem: ").append(problem).append('\n');
            }
            if (loopTime != null) {
                out.append("decode loop: ").append(loopTime).append('\n');
            }
            out.append("server check: ").append(serverCheck == null ? "skipped (no llmzoo /metrics)" : serverCheck).append('\n');
            return out.toString();
        }
    }

    /** Nearest-rank percentile of sorted values; NaN when there are none. */
    static double percentile(double[] sorted, double p) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        return sorted[Math.max(0, Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1))];
    }

    /**
     * One client's draw of a request.
     *
     * @param prompt the prompt's words
     * @param maxTokens the tokens asked for
     * @param leaveAfterChunks text chunks after which the client leaves; 0 to read to the end
     */
    record Draw(String prompt, int maxTokens, int leaveAfterChunks) {}

    /** Draws the next request of a client. */
    static Draw draw(Random random, double disconnect) {
        int words = MIN_WORDS + random.nextInt(MAX_WORDS - MIN_WORDS + 1);
        StringBuilder prompt = new StringBuilder();
        for (int w = 0; w < words; w++) {
            prompt.append(w == 0 ? "" : " ").append(WORDS[random.nextInt(WORDS.length)]);
        }
        int maxTokens = MIN_TOKENS + random.nextInt(MAX_TOKENS - MIN_TOKENS + 1);
        // drawn whether or not it is used: the prompts stay the same with and without --disconnect
        boolean leaves = random.nextDouble() < disconnect;
        int after = 1 + random.nextInt(Math.max(1, maxTokens / 2));
        return new Draw(prompt.toString(), maxTokens, leaves ? after : 0);
    }

    /** What one request came to. */
    /**
     * What one request came to.
     *
     * @param status the HTTP status, 0 where the request failed before one came
     * @param answer the streamed answer read, or {@code null} without a 200
     * @param sentNanos when it was sent ({@link System#nanoTime()})
     * @param problem what went wrong, or {@code null}
     */
    record Outcome(int status, StreamedAnswer answer, long sentNanos, String problem) {}

    /** Sends one drawn request, streamed, and reads its answer (or leaves it, as drawn). */
    Outcome send(Draw draw) throws InterruptedException {
        JsonObject body = new JsonObject();
        if (model != null) {
            body.addProperty("model", model);
        }
        body.addProperty("prompt", draw.prompt());
        body.addProperty("max_tokens", draw.maxTokens());
        body.addProperty("temperature", 0);
        body.addProperty("ignore_eos", true);
        body.addProperty("stream", true);
        JsonObject options = new JsonObject();
        options.addProperty("include_usage", true);
        body.add("stream_options", options);
        HttpRequest.Builder request =
                HttpRequest.newBuilder(base.resolve("/v1/completions"))
                        .timeout(Duration.ofMinutes(10))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body.toString()));
        if (apiKey != null) {
            request.header("Authorization", "Bearer " + apiKey);
        }
        long sent = System.nanoTime();
        try {
            HttpResponse<InputStream> response = client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
            if (response.statusCode() != 200) {
                String text;
                try (InputStream in = response.body()) {
                    text = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
                }
                return new Outcome(response.statusCode(), null, sent, "HTTP " + response.statusCode() + ": " + text.strip());
            }
            StreamedAnswer answer = StreamedAnswer.read(response.body(), draw.leaveAfterChunks());
            return new Outcome(200, answer, sent, answer.problem());
        } catch (IOException e) {
            return new Outcome(0, null, sent, "I/O: " + e);
        }
    }

    /**
     * Runs the load.
     *
     * @param clients concurrent clients
     * @param requestsPerClient requests each client sends, one after another
     * @param seed the seed of the requests' draw (client c draws with {@code seed + c})
     * @param disconnect the share of requests the client leaves early (0 for none)
     * @return the report
     * @throws Exception if a client thread fails
     */
    public Report run(int clients, int requestsPerClient, long seed, double disconnect) throws Exception {
        Map<String, Double> before = ServerMetricsPage.scrape(client, base);
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        List<Future<List<Outcome>>> futures = new ArrayList<>();
        long start = System.nanoTime();
        try {
            for (int c = 0; c < clients; c++) {
                Random random = new Random(seed + c);
                futures.add(
                        pool.submit(
                                () -> {
                                    List<Outcome> outcomes = new ArrayList<>();
                                    for (int r = 0; r < requestsPerClient; r++) {
                                        outcomes.add(send(draw(random, disconnect)));
                                    }
                                    return outcomes;
                                }));
            }
            List<Outcome> all = new ArrayList<>();
            for (Future<List<Outcome>> future : futures) {
                all.addAll(future.get());
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            return report(clients, all, seconds, before);
        } finally {
            pool.shutdownNow();
        }
    }

    private Report report(int clients, List<Outcome> all, double seconds, Map<String, Double> before)
            throws InterruptedException {
        int admitted = 0;
        int rejected = 0;
        int errors = 0;
        int disconnected = 0;
        long tokens = 0;
        List<Double> ttft = new ArrayList<>();
        List<Double> tpot = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        for (Outcome outcome : all) {
            if (outcome.status() == 429) {
                rejected++;
                continue;
            }
            if (outcome.status() == 200) {
                admitted++;
            }
            StreamedAnswer answer = outcome.answer();
            if (answer != null && answer.disconnected()) {
                disconnected++;
            } else if (answer != null && answer.clean()) {
                tokens += answer.tokens();
                if (answer.firstTextNanos() != 0) {
                    ttft.add((answer.firstTextNanos() - outcome.sentNanos()) / 1e9);
                }
                if (answer.tokens() >= 2 && answer.lastTextNanos() > answer.firstTextNanos()) {
                    tpot.add((answer.lastTextNanos() - answer.firstTextNanos()) / 1e9 / (answer.tokens() - 1));
                }
            } else {
                errors++;
                if (problems.size() < 5) {
                    problems.add(outcome.problem());
                }
            }
        }
        String loop = before == null ? null : ServerMetricsPage.loopTime(before, ServerMetricsPage.scrape(client, base), seconds);
        String serverCheck = before == null ? null : ServerMetricsPage.checkEveryRequestEnded(client, base, before, admitted);
        return new Report(clients, admitted, rejected, errors, disconnected, seconds, tokens,
                sorted(ttft), sorted(tpot), problems, serverCheck, loop);
    }

    private static double[] sorted(List<Double> values) {
        Collections.sort(values);
        return values.stream().mapToDouble(Double::doubleValue).toArray();
    }

    /**
     * Declares the options of a client drawing this mix (this one's, {@link SoakTest}'s): {@code
     * --disconnect P} (the share of requests that leave early), {@code --seed S} (the draws'), {@code
     * --model NAME} and {@code --api-key KEY} (the server's; none: {@code LLMZOO_API_KEY}'s).
     *
     * @param command the benchmark's other arguments
     * @return {@code command}, these declared too
     */
    static BenchmarkArgs clientOptions(BenchmarkArgs command) {
        return command.option("--disconnect", "P", "0")
                .option("--seed", "S", "1")
                .option("--model", "NAME", null)
                .option("--api-key", "KEY", null);
    }

    /**
     * @param base the server's base URL
     * @param options a command line with {@link #clientOptions}
     * @return the client of the server they name
     */
    static StreamingLoadTest client(URI base, BenchmarkArgs options) {
        String apiKey = options.text("--api-key", System.getenv("LLMZOO_API_KEY"));
        return new StreamingLoadTest(base, options.text("--model"), apiKey);
    }

    /**
     * Runs it from the command line and prints the report.
     *
     * @param args {@code URL [--clients N] [--requests-per-client K] [--seed S] [--model NAME]
     *     [--api-key KEY] [--disconnect P]}
     * @throws Exception if the run fails
     */
    public static void main(String[] args) throws Exception {
        BenchmarkArgs options = clientOptions(BenchmarkArgs.command("StreamingLoadTest")
                        .positional("URL")
                        .option("--clients", "N", "4")
                        .option("--requests-per-client", "K", "3"))
                .parseOrExit(args);
        URI base = options.value("URL", URI::create);
        int clients = options.integer("--clients");
        int perClient = options.integer("--requests-per-client");
        long seed = options.longInteger("--seed");
        double disconnect = options.decimal("--disconnect");
        System.out.printf(Locale.ROOT, "%s: %d clients x %d streamed requests, seed %d, prompts %d-%d words,"
                        + " max_tokens %d-%d%s%n",
                base, clients, perClient, seed, MIN_WORDS, MAX_WORDS, MIN_TOKENS, MAX_TOKENS,
                disconnect > 0 ? String.format(Locale.ROOT, ", %.0f%% left early", 100 * disconnect) : "");
        Report report = client(base, options).run(clients, perClient, seed, disconnect);
        System.out.print(report.describe());
        System.exit(report.clean() ? 0 : 1);
    }
}
