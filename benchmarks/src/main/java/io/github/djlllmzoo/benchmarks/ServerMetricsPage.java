package io.github.djlllmzoo.benchmarks;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Our server's {@code /metrics} as a load client reads it: the samples of a scrape, and the check
 * that every request a load had admitted ended there (completed, cancelled or timed out; none
 * failed, none still holding a slot).
 */
final class ServerMetricsPage {

    private static final String OUTCOME = "llmzoo_requests_total{outcome=\"";
    private static final Duration SETTLE = Duration.ofSeconds(30);

    private ServerMetricsPage() {}

    /**
     * @return the samples by name with labels, or {@code null} when the server has no llmzoo
     *     metrics (another server, or none at that address)
     */
    static Map<String, Double> scrape(HttpClient client, URI base) throws InterruptedException {
        HttpResponse<String> response;
        try {
            response =
                    client.send(
                            HttpRequest.newBuilder(base.resolve("/metrics")).timeout(Duration.ofSeconds(10)).build(),
                            HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            return null;
        }
        if (response.statusCode() != 200 || !response.body().contains("llmzoo_requests_total")) {
            return null;
        }
        Map<String, Double> samples = new HashMap<>();
        for (String line : response.body().split("\n")) {
            int space = line.lastIndexOf(' ');
            if (!line.startsWith("#") && space > 0) {
                samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1).replace("+Inf", "Infinity")));
            }
        }
        return samples;
    }

    /**
     * Where the decode loop spent a load's wall time, from the counters of two scrapes: prefill and
     * decode passes (with their tokens/s), sampling, the KV pool, the prefix cache, and the rest (the
     * loop's own work and its idle waits).
     *
     * @param before the scrape before the load
     * @param after the scrape after it, or {@code null} where it failed
     * @param seconds the load's wall time
     * @return one line, or {@code null} where the server has no such counters
     */
    static String loopTime(Map<String, Double> before, Map<String, Double> after, double seconds) {
        if (after == null || !after.containsKey("llmzoo_decode_seconds_total")) {
            return null;
        }
        double prefill = counter(after, before, "llmzoo_prefill_seconds_total");
        double decode = counter(after, before, "llmzoo_decode_seconds_total");
        double sampling = counter(after, before, "llmzoo_sampling_seconds_total");
        double pool = counter(after, before, "llmzoo_kv_pool_seconds_total");
        double prefix = counter(after, before, "llmzoo_prefix_cache_seconds_total");
        return String.format(Locale.ROOT,
                "prefill %.1f s (%.0f tokens/s), decode %.1f s (%.0f tokens/s), sampling %.1f s, KV pool %.1f s,"
                        + " prefix cache %.1f s, the rest %.1f s of %.1f s",
                prefill, counter(after, before, "llmzoo_prefill_tokens_total") / prefill, decode,
                counter(after, before, "llmzoo_decode_tokens_total") / decode, sampling, pool, prefix,
                seconds - prefill - decode - sampling - pool - prefix, seconds);
    }

    private static double counter(Map<String, Double> after, Map<String, Double> before, String name) {
        return after.getOrDefault(name, 0.0) - before.getOrDefault(name, 0.0);
    }

    private static double delta(Map<String, Double> after, Map<String, Double> before, String outcome) {
        return counter(after, before, OUTCOME + outcome + "\"}");
    }

    /**
     * Waits until the server holds no request, then checks the admitted ones ended.
     *
     * @param before the scrape before the load
     * @param admitted requests the load saw admitted (200)
     * @return {@code ok: ...} or what is wrong
     */
    static String checkEveryRequestEnded(HttpClient client, URI base, Map<String, Double> before, int admitted)
            throws InterruptedException {
        long deadline = System.nanoTime() + SETTLE.toNanos();
        Map<String, Double> after = scrape(client, base);
        while (after != null && after.getOrDefault("llmzoo_active_requests", 0.0) > 0 && System.nanoTime() < deadline) {
            Thread.sleep(100);
            after = scrape(client, base);
        }
        if (after == null) {
            return "the server's /metrics went away";
        }
        double active = after.getOrDefault("llmzoo_active_requests", 0.0);
        double completed = delta(after, before, "completed");
        double cancelled = delta(after, before, "cancelled");
        double timedOut = delta(after, before, "timed_out");
        double failed = delta(after, before, "failed");
        String counts = String.format(java.util.Locale.ROOT,
                "%.0f completed, %.0f cancelled, %.0f timed out, %.0f failed of %d admitted; %.0f still active",
                completed, cancelled, timedOut, failed, admitted, active);
        boolean ok = active == 0 && failed == 0 && completed + cancelled + timedOut == admitted;
        return (ok ? "ok: " : "FAILED: ") + counts;
    }
}
