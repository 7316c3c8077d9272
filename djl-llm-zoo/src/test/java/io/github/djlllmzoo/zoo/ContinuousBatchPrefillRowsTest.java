package io.github.djlllmzoo.zoo;

import static io.github.djlllmzoo.zoo.ContinuousBatchGoldenTest.greedy;
import static io.github.djlllmzoo.zoo.ContinuousBatchGoldenTest.sampled;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.translators.BatchGenerator;
import io.github.djlllmzoo.translators.ContinuousBatch;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.SequenceState;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A {@link ContinuousBatch} with prefill rows ({@link ContinuousBatchBuilder#prefillRows}) prefills
 * the next prompts beside full decode rows: a row whose sequence ended decodes the next sequence at
 * the next step, admission still never holds more sequences than rows nor more positions than the
 * budget, and every sequence generates what it generates alone.
 */
class ContinuousBatchPrefillRowsTest {

    private static final int DECODE_ROWS = 3;

    /** Prompts of two or three 4-token chunks, so that each takes steps to prefill. */
    private static final int CHUNK = 4;

    @ParameterizedTest(name = "{0}, {1} prefill tokens a step")
    @CsvSource({"llama-gqa, 4", "llama-gqa, 1", "gemma2-softcap-window, 2"})
    void sequencesPrefilledBesideFullDecodeRowsEachGenerateWhatTheyGenerateAlone(String name, int stepTokens)
            throws Exception {
        try (GoldenBatchFixture fixture = GoldenBatchFixture.load(name)) {
            List<long[]> prompts = prompts(fixture, 8);
            List<GenerationConfig> configs = new ArrayList<>();
            for (int i = 0; i < prompts.size(); i++) {
                configs.add(i % 3 == 1 ? sampled(5 + i, 100L + i) : greedy(4 + 2 * i));
            }
            List<SequenceState> states = states(fixture, prompts, configs);
            try (ContinuousBatch batch = batch(fixture, 2, stepTokens, 512)) {
                runAll(batch, states);
            }
            for (int i = 0; i < prompts.size(); i++) {
                long[] alone = new BatchGenerator(fixture.block(), fixture.manager(), null)
                        .generate(List.of(GenerationRequest.ofIds(prompts.get(i), configs.get(i))), null)
                        .get(0)
                        .tokenIds();
                assertArrayEquals(alone, states.get(i).completion().tokenIds(), name + ": sequence " + i);
            }
        }
    }

    /**
     * Sequences whose prompts take two steps each to prefill, all of the same length: without
     * prefill rows, a row whose sequence ended stays empty while the next prompt is prefilled; with
     * them, the next prompt was prefilled ahead and every step decodes every row while enough
     * sequences are left.
     */
    @Test
    void withPrefillRowsARowWhoseSequenceEndedDecodesTheNextSequenceAtTheNextStep() throws Exception {
        try (GoldenBatchFixture fixture = GoldenBatchFixture.load("llama-gqa")) {
            List<long[]> prompts = prompts(fixture, 12);
            List<GenerationConfig> configs = new ArrayList<>();
            for (int i = 0; i < prompts.size(); i++) {
                configs.add(greedy(12));
            }
            int[] withRows;
            try (ContinuousBatch batch = batch(fixture, 2, CHUNK, 512)) {
                withRows = runAll(batch, states(fixture, prompts, configs));
            }
            int[] without;
            try (ContinuousBatch batch = batch(fixture, 0, CHUNK, 512)) {
                without = runAll(batch, states(fixture, prompts, configs));
            }
            assertEquals(0, withRows[0], "steps with an empty decode row while prompts were waiting, prefill rows");
            assertTrue(without[0] > 0, "without prefill rows a row waits for the next prompt's prefill");
            assertTrue(withRows[1] < without[1], "steps with prefill rows " + withRows[1] + ", without " + without[1]);
        }
    }

    /**
     * The batch admits at most {@code maxRows + prefillRows} sequences, and fewer where their
     * reservations would take the pool past its budget; its buffers never exceed the budget.
     */
    @Test
    void admissionBoundsRowsAndBudgetWithPrefillRows() throws Exception {
        try (GoldenBatchFixture fixture = GoldenBatchFixture.load("llama-gqa")) {
            long[] prompt = prompts(fixture, 1).get(0);
            int need = prompt.length + 6;
            try (ContinuousBatch rowsBound = batch(fixture, 2, CHUNK, 64L * (DECODE_ROWS + 2))) {
                assertEquals(DECODE_ROWS + 2, joinWhileRoom(fixture, rowsBound, prompt));
                assertFalse(rowsBound.canJoin(1, need));
                while (rowsBound.sequences() > 0) {
                    rowsBound.step();
                    assertTrue(rowsBound.allocatedTokens() <= rowsBound.tokenBudget());
                }
            }
            long budget = 4L * need; // room for 4 reservations, rows for 5
            try (ContinuousBatch budgetBound = batch(fixture, 2, CHUNK, budget)) {
                assertEquals(4, joinWhileRoom(fixture, budgetBound, prompt));
                for (int step = 0; budgetBound.sequences() > 0; step++) {
                    budgetBound.step();
                    assertTrue(budgetBound.allocatedTokens() <= budget,
                            budgetBound.allocatedTokens() + " positions allocated at step " + step);
                    assertTrue(budgetBound.decodingRows() <= DECODE_ROWS);
                }
            }
        }
    }

    private static int joinWhileRoom(GoldenBatchFixture fixture, ContinuousBatch batch, long[] prompt) {
        int joined = 0;
        while (true) {
            SequenceState state = fixture.state(prompt, greedy(6));
            if (!batch.canJoin(1, batch.need(state.promptLength(), state.budget()))) {
                return joined;
            }
            assertTrue(batch.join(state));
            joined++;
            assertTrue(batch.allocatedTokens() <= batch.tokenBudget());
        }
    }

    private static ContinuousBatch batch(GoldenBatchFixture fixture, int prefillRows, int stepTokens, long budget) {
        return fixture.batch()
                .maxRows(DECODE_ROWS)
                .prefillRows(prefillRows)
                .tokenBudget(budget)
                .prefillChunk(CHUNK)
                .prefillStepTokens(stepTokens)
                .build();
    }

    /** {@code count} prompts of 8 to 12 tokens cut from the golden prompt, repeated where short. */
    private static List<long[]> prompts(GoldenBatchFixture fixture, int count) {
        List<long[]> prompts = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            prompts.add(fixture.prompt(2 * CHUNK + i % (CHUNK + 1), i));
        }
        return prompts;
    }

    private static List<SequenceState> states(
            GoldenBatchFixture fixture, List<long[]> prompts, List<GenerationConfig> configs) {
        List<SequenceState> states = new ArrayList<>();
        for (int i = 0; i < prompts.size(); i++) {
            states.add(fixture.state(prompts.get(i), configs.get(i)));
        }
        return states;
    }

    /**
     * Joins the sequences in order as room allows, as the server's loop does, and steps until all
     * ended.
     *
     * @return the steps whose decode pass left a row empty while a joined sequence was not decoding
     *     yet (once the rows first filled), and the steps taken
     */
    private static int[] runAll(ContinuousBatch batch, List<SequenceState> states) {
        int next = 0;
        int holes = 0;
        boolean filled = false;
        int steps = 0;
        while (next < states.size() || batch.sequences() > 0) {
            while (next < states.size()) {
                SequenceState state = states.get(next);
                if (!batch.canJoin(1, batch.need(state.promptLength(), state.budget()))) {
                    break;
                }
                assertTrue(batch.join(state));
                next++;
            }
            long decodedBefore = batch.counters().decodeTokens();
            int inBatch = batch.sequences();
            int decodingBefore = batch.decodingRows();
            batch.step();
            long decoded = batch.counters().decodeTokens() - decodedBefore;
            filled |= decoded == DECODE_ROWS;
            if (filled && decoded < DECODE_ROWS && inBatch > decodingBefore && inBatch >= DECODE_ROWS) {
                holes++;
            }
            steps++;
            assertTrue(steps < 1000, "the batch ends");
        }
        assertEquals(0, batch.decodingRows());
        return new int[] {holes, steps};
    }
}
