package io.github.djlllmzoo.server;

import io.github.djlllmzoo.translators.PrefixCache;
import io.github.djlllmzoo.translators.StepCounters;
import java.util.concurrent.atomic.LongAdder;

/**
 * The server's {@code /metrics} page, in Prometheus' text format: the scheduler's counters, gauges
 * and timings, and what the HTTP layer refuses before a request reaches the scheduler. Every name
 * starts with {@code llmzoo_}; docs/serving-production.md says what each one means.
 */
final class ServerMetrics {

    /** Requests refused with 401 (no or a wrong API key). */
    final LongAdder unauthorized = new LongAdder();

    /** Generation requests refused with 503 (the server is draining or closed). */
    final LongAdder unavailable = new LongAdder();

    /**
     * @param stats the scheduler's counters and gauges, read now
     * @param timings the scheduler's timings and token counts
     * @param trimmer the server's trims of glibc's heaps, or {@code null} where it has none
     * @return the page
     */
    String page(GenerationScheduler.Stats stats, GenerationMetrics timings, NativeHeapTrimmer trimmer) {
        PrometheusText out = new PrometheusText();
        String requests = "llmzoo_requests_total";
        out.header(requests, "counter", "Generation requests by how they ended.");
        out.sample(requests, "outcome", "completed", stats.completed());
        out.sample(requests, "outcome", "cancelled", stats.cancelled());
        out.sample(requests, "outcome", "failed", stats.failed());
        out.sample(requests, "outcome", "timed_out", stats.timedOut());
        out.sample(requests, "outcome", "rejected", stats.rejected());
        out.sample(requests, "outcome", "unavailable", unavailable.sum());
        out.metric(
                "llmzoo_unauthorized_requests_total",
                "counter",
                "Requests to /v1 refused for want of an accepted API key.",
                unauthorized.sum());
        out.metric(
                "llmzoo_prompt_tokens_total",
                "counter",
                "Prompt tokens of the admitted requests.",
                stats.promptTokens());
        out.metric(
                "llmzoo_generation_tokens_total",
                "counter",
                "Tokens generated, over all sequences.",
                stats.generatedTokens());
        timings.timeToFirstToken.write(
                out,
                "llmzoo_time_to_first_token_seconds",
                "From admission to a request's first generated token.");
        timings.timePerOutputToken.write(
                out,
                "llmzoo_time_per_output_token_seconds",
                "After the first token, the time per further token of a completed request.");
        timings.requestDuration.write(
                out,
                "llmzoo_request_duration_seconds",
                "From admission to the last token of a completed request.");
        out.metric(
                "llmzoo_active_requests",
                "gauge",
                "Requests holding a slot now (waiting or generating).",
                stats.active());
        out.metric(
                "llmzoo_queued_requests",
                "gauge",
                "Admitted requests waiting to join the decode loop's batch now.",
                stats.queued());
        out.metric(
                "llmzoo_running_rows",
                "gauge",
                "Sequences in the decode loop's batch now (decoding, or their prompt being prefilled or waiting to be).",
                stats.runningRows());
        out.metric(
                "llmzoo_max_concurrent_requests",
                "gauge",
                "Slots: the most requests admitted at once (--max-concurrency).",
                stats.maxConcurrency());
        out.metric(
                "llmzoo_batches_total",
                "counter",
                "Busy periods of the decode loop (from a request joining an empty batch until it is empty again).",
                stats.batches());
        out.metric(
                "llmzoo_batched_requests_total",
                "counter",
                "Requests that joined the decode loop's batch (over llmzoo_batches_total: requests per busy period).",
                stats.batchedJobs());
        out.metric("llmzoo_decode_steps_total", "counter", "Steps the decode loop ran.", stats.steps());
        StepCounters loop = stats.loop();
        out.metric(
                "llmzoo_prefill_tokens_total",
                "counter",
                "Prompt tokens the decode loop prefilled (those restored from the prefix cache excluded).",
                loop.prefillTokens());
        out.metric(
                "llmzoo_prefill_seconds_total",
                "counter",
                "Time the decode loop spent in prefill forward passes.",
                loop.prefillNanos() / 1e9);
        out.metric(
                "llmzoo_decode_tokens_total",
                "counter",
                "Tokens the decode loop's decode passes computed (one per running sequence a step).",
                loop.decodeTokens());
        out.metric(
                "llmzoo_decode_seconds_total",
                "counter",
                "Time the decode loop spent in decode forward passes.",
                loop.decodeNanos() / 1e9);
        timings.decodePass.write(
                out,
                "llmzoo_decode_pass_seconds",
                "A decode pass of the decode loop, in a step that ran no prefill layers before it.");
        timings.decodePassAfterPrefill.write(
                out,
                "llmzoo_decode_pass_after_prefill_seconds",
                "A decode pass of the decode loop, in a step that ran prefill layers just before it.");
        timings.prefillStep.write(
                out,
                "llmzoo_prefill_step_seconds",
                "A step's prefill work: some or all layers of a prompt chunk's pass.");
        out.metric(
                "llmzoo_sampling_seconds_total",
                "counter",
                "Time the decode loop spent turning logits into tokens and text (samplers, detokenizers, stops, streams).",
                loop.sampleNanos() / 1e9);
        out.metric(
                "llmzoo_kv_pool_seconds_total",
                "counter",
                "Time the decode loop spent allocating the KV pool and moving its rows.",
                loop.poolNanos() / 1e9);
        out.metric(
                "llmzoo_prefix_cache_seconds_total",
                "counter",
                "Time the decode loop spent restoring and storing cached prompt prefixes.",
                loop.prefixNanos() / 1e9);
        out.metric(
                "llmzoo_kv_pool_tokens",
                "gauge",
                "Token positions the KV pool's buffers hold now (rows x capacity).",
                stats.kvPoolTokens());
        out.metric(
                "llmzoo_kv_pool_held_tokens",
                "gauge",
                "Token positions the rows hold now (computed keys and values); the rest of the buffers is reserved or unused.",
                stats.kvPoolHeld());
        out.metric(
                "llmzoo_kv_pool_budget_tokens",
                "gauge",
                "The most token positions the KV pool may hold (--kv-cache-tokens).",
                stats.kvPoolBudget());
        out.metric(
                "llmzoo_kv_pool_bytes",
                "gauge",
                "Bytes the KV pool's buffers hold now.",
                stats.kvPoolTokens() * stats.kvBytesPerToken());
        PrefixCache.Stats prefixes = stats.prefixCache();
        out.metric(
                "llmzoo_prefix_cache_lookups_total",
                "counter",
                "Sequences that looked for a cached prompt prefix as their prefill started.",
                prefixes.lookups());
        out.metric(
                "llmzoo_prefix_cache_hits_total",
                "counter",
                "Sequences that reused the keys and values of a cached prompt prefix.",
                prefixes.hits());
        out.metric(
                "llmzoo_prefix_cache_reused_tokens_total",
                "counter",
                "Prompt tokens restored from the prefix cache rather than computed.",
                prefixes.reusedTokens());
        out.metric(
                "llmzoo_prefix_cache_tokens",
                "gauge",
                "Prompt positions the prefix cache keeps now.",
                prefixes.cachedTokens());
        out.metric(
                "llmzoo_prefix_cache_budget_tokens",
                "gauge",
                "The most prompt positions the prefix cache keeps (--prefix-cache-tokens).",
                prefixes.budgetTokens());
        out.metric(
                "llmzoo_malloc_trims_total",
                "counter",
                "Times the server gave glibc's free heap memory back to the kernel (malloc_trim; 0 without glibc).",
                trimmer == null ? 0 : trimmer.trims());
        out.metric(
                "llmzoo_malloc_trim_seconds_total",
                "counter",
                "Time those trims took.",
                trimmer == null ? 0 : trimmer.seconds());
        return out.toString();
    }
}
