package io.github.djlllmzoo.benchmarks;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The soak's verdict: a leak fails it, memory that settled or that the KV gauges explain does not. */
class SoakTestTest {

    /** The resident size's ups and downs between samples, MiB. */
    private static final double JITTER = 4;

    private static List<SoakTest.Sample> samples(double leakMibPerSample, double poolGrowthMib) {
        return samples(leakMibPerSample, poolGrowthMib, 0);
    }

    private static List<SoakTest.Sample> samples(
            double leakMibPerSample, double poolGrowthMib, double prefixTokensPerSample) {
        List<SoakTest.Sample> samples = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            double pool = i < 10 ? 0 : poolGrowthMib; // the pool grows once, half-way
            double rss = 800 + (i % 2 == 0 ? 0 : JITTER) + i * leakMibPerSample + pool;
            samples.add(new SoakTest.Sample(500 + 250 * i, rss, rss - 80, Map.of(
                    "llmzoo_kv_pool_bytes", pool * (1 << 20) + 50.0 * (1 << 20),
                    "llmzoo_kv_pool_tokens", (pool * (1 << 20) + 50.0 * (1 << 20)) / 24576,
                    "llmzoo_prefix_cache_tokens", 2048.0 + i * prefixTokensPerSample)));
        }
        return samples;
    }

    @Test
    void memoryThatStaysWithinItsJitterPasses() {
        String verdict = SoakTest.verdict(samples(0, 0));
        assertTrue(verdict.startsWith("ok"), verdict);
    }

    @Test
    void memoryThatGrowsWithEveryRequestFails() {
        // 1 MiB per 250 requests: 19 MiB over the run, far past the jitter
        String verdict = SoakTest.verdict(samples(1, 0));
        assertTrue(verdict.startsWith("FAILED"), verdict);
    }

    @Test
    void growthTheKvPoolExplainsPasses() {
        String verdict = SoakTest.verdict(samples(0, 96));
        assertTrue(verdict.startsWith("ok"), verdict);
    }

    /**
     * The prefix cache's store is made whole at its first prompt: more positions kept later take no
     * memory, so growth that goes with them is growth all the same.
     */
    @Test
    void growthBesidePrefixCachePositionsFails() {
        // 1 MiB per 250 requests while the kept positions grow by 1 MiB's worth (24 KiB each)
        String verdict = SoakTest.verdict(samples(1, 0, (1 << 20) / 24576.0));
        assertTrue(verdict.startsWith("FAILED"), verdict);
    }

    @Test
    void oneSampleCaughtLowAtTheStartDoesNotFailFlatMemory() {
        // session 19's soak: the first sample after the warm-up 21-33 MiB under every later one, the last a
        // little over the first half's highest: the last less the first passed the first half's range
        List<SoakTest.Sample> samples = new ArrayList<>(samples(0, 0));
        SoakTest.Sample first = samples.get(0);
        samples.set(0, new SoakTest.Sample(first.requests(), first.rssMib() - 8 * JITTER, first.anonMib(), first.metrics()));
        SoakTest.Sample last = samples.get(samples.size() - 1);
        samples.set(samples.size() - 1,
                new SoakTest.Sample(last.requests(), last.rssMib() + 2 * JITTER, last.anonMib(), last.metrics()));
        String verdict = SoakTest.verdict(samples);
        assertTrue(verdict.startsWith("ok"), verdict);
    }

    @Test
    void tooFewSamplesFail() {
        String verdict = SoakTest.verdict(samples(0, 0).subList(0, 2));
        assertTrue(verdict.startsWith("FAILED"), verdict);
    }
}
