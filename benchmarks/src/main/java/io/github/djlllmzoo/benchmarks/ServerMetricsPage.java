package io.github.djlllmzoo.benchmarks;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
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

    private static double delta(Map<String, Double> after, Map<String, Double> before, String outcome) {
        String key = OUTCOME + outcome + "\"}";
        return after.getOrDefault(key, 0.0) - before.getOrDefault(key, 0.0);
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
