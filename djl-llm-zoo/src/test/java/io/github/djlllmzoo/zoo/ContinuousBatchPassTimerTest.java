package io.github.djlllmzoo.zoo;

import static io.github.djlllmzoo.zoo.ContinuousBatchGoldenTest.greedy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.translators.ContinuousBatch;
import io.github.djlllmzoo.translators.PassTimer;
import io.github.djlllmzoo.translators.StepCounters;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A {@link ContinuousBatch}'s {@link PassTimer} is told every forward pass once, as it ends: each
 * decode pass with its rows and whether prefill layers ran before it in the same step, each step's
 * prefill work with the layers it ran; their times add up to the batch's {@link StepCounters}.
 */
class ContinuousBatchPassTimerTest {

    private static final int CHUNK = 4;

    /** What the timer was told, one entry a call. */
    private static final class Recorded implements PassTimer {
        final List<long[]> decodes = new ArrayList<>(); // rows, nanos, after prefill (0 or 1), step
        final List<long[]> prefills = new ArrayList<>(); // tokens, layers, nanos, step
        long step;

        @Override
        public void decodePass(int rows, long nanos, boolean afterPrefill) {
            decodes.add(new long[] {rows, nanos, afterPrefill ? 1 : 0, step});
        }

        @Override
        public void prefillLayers(int tokens, int layers, long nanos) {
            prefills.add(new long[] {tokens, layers, nanos, step});
        }
    }

    @Test
    void everyPassIsTimedOnceAndADecodePassAfterPrefillLayersIsMarked() throws Exception {
        try (GoldenBatchFixture fixture = GoldenBatchFixture.load("llama-gqa")) {
            int layers = fixture.block().config().numLayers();
            assertTrue(layers >= 2, "the test spreads a chunk's layers over steps");
            Recorded timer = new Recorded();
            try (ContinuousBatch batch = fixture.batch()
                    .maxRows(2)
                    .tokenBudget(256)
                    .prefillChunk(CHUNK)
                    .prefillStepTokens(1) // one layer a step while a sequence decodes
                    .passTimer(timer)
                    .build()) {
                long[] first = fixture.prompt(CHUNK, 0);
                long[] second = fixture.prompt(2 * CHUNK, 0); // joins while the first decodes
                batch.join(fixture.state(first, greedy(30)));
                for (timer.step = 0; batch.sequences() > 0; timer.step++) {
                    if (timer.step == 2) {
                        batch.join(fixture.state(second, greedy(4)));
                    }
                    batch.step();
                }
                StepCounters counters = batch.counters();
                long decodeRows = 0;
                long decodeNanos = 0;
                for (long[] d : timer.decodes) {
                    decodeRows += d[0];
                    decodeNanos += d[1];
                    boolean prefilledInStep = timer.prefills.stream().anyMatch(p -> p[3] == d[3]);
                    assertEquals(prefilledInStep, d[2] == 1, "decode pass of step " + d[3]);
                }
                assertEquals(counters.decodeTokens(), decodeRows);
                assertEquals(counters.decodeNanos(), decodeNanos);
                long layersRun = 0;
                long prefillNanos = 0;
                for (long[] p : timer.prefills) {
                    assertEquals(CHUNK, p[0]);
                    layersRun += p[1];
                    prefillNanos += p[2];
                }
                assertEquals(3L * layers, layersRun, "three chunks, each through every layer");
                assertEquals(counters.prefillNanos(), prefillNanos);
                assertTrue(timer.prefills.size() >= 2L * layers,
                        "the second prompt's two chunks ran a layer a step: " + timer.prefills.size() + " steps");
                assertTrue(timer.decodes.stream().anyMatch(d -> d[2] == 1)
                        && timer.decodes.stream().anyMatch(d -> d[2] == 0));
            }
        }
    }
}
