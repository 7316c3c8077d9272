package io.github.djlllmzoo.benchmarks;

import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A soak of a running OpenAI-compatible server: N requests of {@link StreamingLoadTest}'s seeded mix
 * from C closed-loop streaming clients, sampling the server process's resident memory ({@code
 * /proc/PID/status}) and our {@code /metrics} gauges every K requests, to show whether memory stays
 * flat. It prints a table of the samples and the growth from the first sample after the warm-up to
 * the last, and fails (exit 1) when the resident memory grew by more than the bound {@link
 * #verdict} derives. Every 100 ms it also reads the KV pool's gauges, and prints what the pool held
 * unused as per-row slots against what a table of 16-token blocks would (docs/serving-production.md).
 *
 * <p>Run as {@code SoakTest URL --pid PID [--requests N] [--clients C] [--every K] [--warmup W]
 * [--max-tokens T] [--disconnect P] [--seed S] [--model NAME] [--api-key KEY]}; {@code
 * scripts/load-openai.sh URL --soak} runs it and finds the PID.
 */
public final class SoakTest {

    /** The gauges each sample shows, by the column's name. */
    private static final String[][] GAUGES = {
        {"kv MiB", "llmzoo_kv_pool_bytes"},
        {"kv tok", "llmzoo_kv_pool_tokens"},
        {"held tok", "llmzoo_kv_pool_held_tokens"},
        {"prefix tok", "llmzoo_prefix_cache_tokens"},
        {"rows", "llmzoo_running_rows"},
        {"queued", "llmzoo_queued_requests"},
        {"active", "llmzoo_active_requests"},
    };

    /** How often the pool's gauges are read for the slots-against-blocks figures. */
    private static final Duration POOL_TRACE = Duration.ofMillis(100);

    /** The block size the pool is compared with (vLLM's default). */
    static final int BLOCK = 16;

    private SoakTest() {}

    /**
     * One sample.
     *
     * @param requests requests ended when it was taken
     * @param rssMib the server's resident memory
     * @param anonMib its anonymous part (heap, native arrays)
     * @param metrics the scraped samples, or {@code null} without our metrics
     */
    record Sample(int requests, double rssMib, double anonMib, Map<String, Double> metrics) {

        double gauge(String name) {
            return metrics == null ? Double.NaN : metrics.getOrDefault(name, Double.NaN);
        }

        /** @return bytes one KV position takes, from the pool's gauges, or NaN before the pool exists */
        double bytesPerToken() {
            double tokens = gauge("llmzoo_kv_pool_tokens");
            return tokens > 0 ? gauge("llmzoo_kv_pool_bytes") / tokens : Double.NaN;
        }
    }

    /**
     * Whether memory stayed flat over the samples after the warm-up. A leak holds memory per
     * request, so it grows the resident size in proportion to the requests served: over the whole
     * run twice what it grew over the first half. A process that has settled moves, in the second
     * half, within the range it already moved in the first (the collector's and the allocator's
     * ups and downs). So the resident size less what the gauges explain (the KV pool's bytes
     * growing, bounded by its budget) is fitted by least squares over requests, and its fitted
     * growth over the run must stay within that series' range over the first half. The fit, not the
     * last sample less the first, so that one sample caught low or high at either end (a collection,
     * a trim) does not decide. The prefix cache's positions explain nothing: its store is made whole
     * at its first prompt, long before the warm-up ends, and the prompts it keeps come and go within
     * it. A leak of L MiB per 1,000 requests over R requests fails once L R / 2,000 exceeds the
     * jitter of the resident size.
     *
     * @param samples the samples after the warm-up, in order (at least 3)
     * @return the verdict line, starting with {@code ok} or {@code FAILED}
     */
    static String verdict(List<Sample> samples) {
        if (samples.size() < 3) {
            return "FAILED: " + samples.size() + " samples after the warm-up; at least 3 are needed";
        }
        Sample first = samples.get(0);
        Sample last = samples.get(samples.size() - 1);
        List<Sample> unexplained = new ArrayList<>();
        for (Sample s : samples) {
            double rss = s.rssMib() - Math.max(0, explainedMib(first, s));
            unexplained.add(new Sample(s.requests(), rss, s.anonMib(), s.metrics()));
        }
        double low = Double.MAX_VALUE;
        double high = -Double.MAX_VALUE;
        for (Sample s : unexplained.subList(0, unexplained.size() / 2 + 1)) {
            low = Math.min(low, s.rssMib());
            high = Math.max(high, s.rssMib());
        }
        double jitter = high - low;
        long span = last.requests() - first.requests();
        double perRequest = slope(unexplained);
        double growth = perRequest * span;
        return String.format(Locale.ROOT,
                "%s: resident memory grew %.1f MiB over %d requests by least squares (%.2f MiB per 1,000; last less"
                        + " first %.1f), the KV pool's growth %.1f MiB set apart; bound %.1f MiB = the first half's range",
                growth <= jitter ? "ok" : "FAILED", growth, span, 1000 * perRequest,
                last.rssMib() - first.rssMib(), Math.max(0, explainedMib(first, last)), jitter);
    }

    /** @return MiB the KV pool's gauge grew by between two samples */
    static double explainedMib(Sample from, Sample to) {
        double pool = to.gauge("llmzoo_kv_pool_bytes") - from.gauge("llmzoo_kv_pool_bytes");
        return (Double.isNaN(pool) ? 0 : pool) / (1 << 20);
    }

    /** @return the least-squares slope of the resident size over requests, MiB per request */
    static double slope(List<Sample> samples) {
        double n = samples.size();
        double mx = samples.stream().mapToDouble(Sample::requests).sum() / n;
        double my = samples.stream().mapToDouble(Sample::rssMib).sum() / n;
        double sxy = 0;
        double sxx = 0;
        for (Sample s : samples) {
            sxy += (s.requests() - mx) * (s.rssMib() - my);
            sxx += (s.requests() - mx) * (s.requests() - mx);
        }
        return sxx == 0 ? 0 : sxy / sxx;
    }

    /**
     * What the KV pool held unused over a trace of its gauges, as per-row slots (its buffers: rows ×
     * capacity, less the positions the rows hold) and as a table of {@value #BLOCK}-token blocks
     * allocated as rows grow (each row's last block part empty: on average {@code (BLOCK - 1) / 2}
     * positions a row where lengths fall evenly within a block, at most {@code BLOCK - 1}).
     *
     * @param trace the gauges read while rows ran
     * @return the summary lines
     */
    static String poolSummary(List<Sample> trace) {
        List<Sample> busy = trace.stream().filter(s -> s.gauge("llmzoo_running_rows") > 0).toList();
        if (busy.isEmpty() || Double.isNaN(busy.get(0).gauge("llmzoo_kv_pool_held_tokens"))) {
            return "KV pool: no trace (no rows ran, or the server has no llmzoo_kv_pool_held_tokens)";
        }
        double allocated = mean(busy, "llmzoo_kv_pool_tokens");
        double held = mean(busy, "llmzoo_kv_pool_held_tokens");
        double rows = mean(busy, "llmzoo_running_rows");
        double perToken = busy.get(busy.size() - 1).bytesPerToken();
        double blockUnused = rows * (BLOCK - 1) / 2.0;
        return String.format(Locale.ROOT,
                "KV pool over %d reads while rows ran: %.0f positions allocated, %.0f held by %.2f rows%n"
                        + "  per-row slots hold unused %.0f positions (%.1f MiB, %.0f%% of the buffers)%n"
                        + "  %d-token blocks would hold unused about %.0f (%.1f MiB; at most %.0f)",
                busy.size(), allocated, held, rows,
                allocated - held, (allocated - held) * perToken / (1 << 20), 100 * (allocated - held) / allocated,
                BLOCK, blockUnused, blockUnused * perToken / (1 << 20), rows * (BLOCK - 1));
    }

    private static double mean(List<Sample> samples, String gauge) {
        return samples.stream().mapToDouble(s -> s.gauge(gauge)).average().orElse(Double.NaN);
    }

    private static Sample sample(HttpClient client, URI base, long pid, int requests) throws InterruptedException {
        return new Sample(
                requests,
                ProcessMemory.rssMib(pid),
                ProcessMemory.anonRssMib(pid),
                ServerMetricsPage.scrape(client, base));
    }

    private static String row(Sample s) {
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%8d %9.1f %9.1f", s.requests(), s.rssMib(), s.anonMib()));
        for (String[] gauge : GAUGES) {
            double value = s.gauge(gauge[1]);
            if (gauge[0].endsWith("MiB")) {
                value /= 1 << 20;
            }
            line.append(String.format(Locale.ROOT, " %10.1f", value));
        }
        return line.toString();
    }

    private static String header() {
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%8s %9s %9s", "requests", "RSS MiB", "anon MiB"));
        for (String[] gauge : GAUGES) {
            line.append(String.format(Locale.ROOT, " %10s", gauge[0]));
        }
        return line.toString();
    }

    /**
     * Runs the soak from the command line.
     *
     * @param args see the class comment
     * @throws Exception if the run fails
     */
    public static void main(String[] args) throws Exception {
        BenchmarkArgs options = StreamingLoadTest.clientOptions(BenchmarkArgs.command("SoakTest")
                        .positional("URL")
                        .required("--pid", "PID")
                        .option("--requests", "N", "5000")
                        .option("--clients", "C", "8")
                        .option("--every", "K", "250")
                        .option("--warmup", "W", null) // none: a tenth of the requests, at least one sample's
                        .option("--max-tokens", "T", String.valueOf(StreamingLoadTest.MAX_TOKENS)))
                .parseOrExit(args);
        URI base = options.value("URL", URI::create);
        long pid = options.longInteger("--pid");
        int requests = options.integer("--requests");
        int clients = options.integer("--clients");
        int every = options.integer("--every");
        int maxTokens = options.integer("--max-tokens");
        double disconnect = options.decimal("--disconnect");
        long seed = options.longInteger("--seed");
        if (pid <= 0 || ProcessMemory.rssMib(pid) < 0) {
            throw options.fail("--pid must name the server's process (no /proc/" + pid + "/status)");
        }
        int warmup = options.has("--warmup") ? options.integer("--warmup") : -1;
        if (warmup < 0) {
            warmup = Math.max(every, requests / 10);
        }
        System.out.printf(Locale.ROOT, "%s (pid %d): %d streamed requests from %d clients, seed %d, prompts %d-%d words,"
                        + " max_tokens min(%d-%d drawn, %d)%s; a sample every %d requests, warm-up %d%n",
                base, pid, requests, clients, seed, StreamingLoadTest.MIN_WORDS, StreamingLoadTest.MAX_WORDS,
                StreamingLoadTest.MIN_TOKENS, StreamingLoadTest.MAX_TOKENS, maxTokens,
                disconnect > 0 ? String.format(Locale.ROOT, ", %.0f%% left early", 100 * disconnect) : "", every, warmup);
        int code = run(StreamingLoadTest.client(base, options), base, pid, requests, clients, every, warmup, maxTokens,
                disconnect, seed);
        System.exit(code);
    }

    private static int run(StreamingLoadTest load, URI base, long pid, int requests, int clients, int every,
            int warmup, int maxTokens, double disconnect, long seed) throws Exception {
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        AtomicInteger next = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        AtomicInteger rejected = new AtomicInteger();
        AtomicInteger errors = new AtomicInteger();
        List<String> problems = new CopyOnWriteArrayList<>();
        List<Sample> trace = new CopyOnWriteArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(clients + 1);
        List<Future<?>> futures = new ArrayList<>();
        long start = System.nanoTime();
        for (int c = 0; c < clients; c++) {
            Random random = new Random(seed + c);
            futures.add(pool.submit(() -> {
                while (next.getAndIncrement() < requests) {
                    StreamingLoadTest.Draw draw = StreamingLoadTest.draw(random, disconnect);
                    int tokens = Math.min(draw.maxTokens(), maxTokens);
                    int leave = draw.leaveAfterChunks() == 0 ? 0 : 1 + (draw.leaveAfterChunks() - 1) % Math.max(1, tokens / 2);
                    StreamingLoadTest.Outcome outcome =
                            load.send(new StreamingLoadTest.Draw(draw.prompt(), tokens, leave));
                    if (outcome.status() == 429) {
                        rejected.incrementAndGet();
                    } else if (outcome.answer() == null || !outcome.answer().clean() && !outcome.answer().disconnected()) {
                        errors.incrementAndGet();
                        if (problems.size() < 5) {
                            problems.add(outcome.problem());
                        }
                    }
                    done.incrementAndGet();
                }
                return null;
            }));
        }
        Future<?> tracer = pool.submit(() -> {
            while (done.get() < requests) {
                trace.add(new Sample(done.get(), Double.NaN, Double.NaN, ServerMetricsPage.scrape(client, base)));
                Thread.sleep(POOL_TRACE.toMillis());
            }
            return null;
        });
        System.out.println(header());
        List<Sample> samples = new ArrayList<>();
        Sample before = sample(client, base, pid, 0);
        System.out.println(row(before));
        for (int mark = every; mark <= requests; mark += every) {
            while (done.get() < mark) {
                Thread.sleep(5);
            }
            Sample s = sample(client, base, pid, done.get());
            System.out.println(row(s) + (mark < warmup ? "   (warm-up)" : ""));
            if (mark >= warmup) {
                samples.add(s);
            }
        }
        for (Future<?> future : futures) {
            future.get();
        }
        tracer.get();
        pool.shutdownNow();
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf(Locale.ROOT, "%d requests in %.0f s (%.1f/s): %d rejected (429), %d errors%n",
                requests, seconds, requests / seconds, rejected.get(), errors.get());
        for (String problem : problems) {
            System.out.println("problem: " + problem);
        }
        System.out.println(poolSummary(trace));
        String verdict = verdict(samples);
        System.out.println(verdict);
        return verdict.startsWith("ok") && errors.get() == 0 ? 0 : 1;
    }
}
