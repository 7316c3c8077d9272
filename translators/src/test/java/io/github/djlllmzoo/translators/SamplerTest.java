package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class SamplerTest {

    private static final float[] LOGITS = {
        (float) Math.log(0.5), (float) Math.log(0.3), Float.NEGATIVE_INFINITY, (float) Math.log(0.2)
    };

    private static List<Integer> draws(long seed, int n) {
        Sampler sampler = Sampler.seeded(seed, 1).get(0);
        List<Integer> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(sampler.sample(LOGITS));
        }
        return out;
    }

    @Test
    void theSameSeedDrawsTheSameTokensOnEveryThread() throws Exception {
        List<Integer> expected = draws(42, 200);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<List<Integer>>> futures = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                futures.add(pool.submit(() -> draws(42, 200)));
            }
            for (Future<List<Integer>> f : futures) {
                assertEquals(expected, f.get());
            }
        } finally {
            pool.shutdown();
        }
        assertNotEquals(expected, draws(43, 200));
    }

    @Test
    void sequencesOfOneSeedDrawIndependently() {
        List<Sampler> samplers = Sampler.seeded(7, 2);
        StringBuilder a = new StringBuilder();
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < 100; i++) {
            a.append(samplers.get(0).sample(LOGITS));
            b.append(samplers.get(1).sample(LOGITS));
        }
        assertNotEquals(a.toString(), b.toString());
    }

    @Test
    void drawFrequenciesFollowTheSoftmaxAndSkipRemovedTokens() {
        int n = 40_000;
        int[] counts = new int[LOGITS.length];
        for (int token : draws(1, n)) {
            counts[token]++;
        }
        assertEquals(0, counts[2]);
        double[] expected = {0.5, 0.3, 0.0, 0.2};
        for (int i = 0; i < counts.length; i++) {
            double sd = Math.sqrt(expected[i] * (1 - expected[i]) / n);
            assertEquals(expected[i], counts[i] / (double) n, 5 * sd + 1e-9, "token " + i);
        }
    }

    @Test
    void argmaxAndLogProbabilityMatchHandComputedValues() {
        assertEquals(0, Sampler.argmax(LOGITS));
        assertEquals(1, Sampler.argmax(new float[] {1f, 3f, 3f}), "first of a tie");
        float[] logits = {1f, 2f, 3f};
        double lse = Math.log(Math.exp(1) + Math.exp(2) + Math.exp(3));
        // computed in float64, then rounded to float by half an ulp
        assertEquals(2 - lse, Sampler.logProbability(logits, 1), Math.ulp((float) (2 - lse)));
    }

    @Test
    void samplingFromNothingFails() {
        Sampler sampler = Sampler.seeded(1, 1).get(0);
        float[] none = {Float.NEGATIVE_INFINITY, Float.NEGATIVE_INFINITY};
        assertTrue(assertThrows(IllegalStateException.class, () -> sampler.sample(none))
                .getMessage().contains("no token"));
    }
}
