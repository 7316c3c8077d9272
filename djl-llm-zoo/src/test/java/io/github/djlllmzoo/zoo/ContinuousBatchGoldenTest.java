package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.KvCacheDtype;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.translators.BatchGenerator;
import io.github.djlllmzoo.translators.ContinuousBatch;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.SequenceState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Sequences that join a {@link ContinuousBatch} and leave it at different steps, their prompts
 * prefilled a few tokens a step between the others' decode steps, each generate what their request
 * generates alone ({@link BatchGenerator} with that request only): greedy and seeded sampling, on a
 * Llama golden checkpoint and on the sliding-window families (Mistral, Gemma 2), with the CPU kernels
 * and with the engine's reference operations.
 */
class ContinuousBatchGoldenTest {

    /** A sequence to run: its prompt, its config, and the step at which it joins. */
    private record Entry(long[] prompt, GenerationConfig config, int joinStep) {}

    @ParameterizedTest(name = "{0}, chunk {1}, {2} prefill tokens a step, reference kernels {3}, {4} KV cache")
    @CsvSource({
        "llama-gqa, 3, 3, false, float32",
        "llama-gqa, 5, 5, true, float32",
        "llama-gqa, 4, 1, false, float32", // each chunk's layers spread over steps
        "llama-gqa, 5, 2, true, float32",
        "mistral-sliding-window, 3, 3, false, float32",
        "mistral-sliding-window, 4, 4, true, float32",
        "mistral-sliding-window, 4, 1, true, float32",
        "gemma2-softcap-window, 3, 3, false, float32",
        "gemma2-softcap-window, 3, 1, false, float32",
        // a float16 cache (--kv-cache-dtype float16): every row rounds its keys and values alike, in a
        // batch's slot cache as in a cache of its own, by the kernels as by the engine
        "llama-gqa, 3, 3, false, float16",
        "llama-gqa, 5, 2, true, float16",
        "mistral-sliding-window, 4, 1, false, float16",
        "gemma2-softcap-window, 3, 3, false, float16",
    })
    void sequencesJoiningAndLeavingAtDifferentStepsEachGenerateWhatTheyGenerateAlone(
            String name, int chunk, int stepTokens, boolean reference, String kvCacheDtype) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        List<Entry> entries = entries(golden.promptIds());
        try (LocalModel model = LocalModel.load(golden.dir());
                NDManager manager = model.model().getNDManager().newSubManager()) {
            CausalLmBlock block = model.block();
            block.setKvCacheDtype(KvCacheDtype.parse(kvCacheDtype, KvCacheDtype.ARGUMENT));
            if (reference) {
                block.useKernels(EngineKernels.INSTANCE);
            }
            try {
                List<long[]> alone = new ArrayList<>();
                for (Entry entry : entries) {
                    alone.add(new BatchGenerator(block, manager, null)
                            .generate(List.of(GenerationRequest.ofIds(entry.prompt(), entry.config())), null)
                            .get(0)
                            .tokenIds());
                }
                List<SequenceState> states = run(block, manager, entries, chunk, stepTokens, new long[1], 0);
                for (int i = 0; i < entries.size(); i++) {
                    assertArrayEquals(alone.get(i), states.get(i).completion().tokenIds(), name + ": sequence " + i);
                }
            } finally {
                block.useKernels(null);
            }
        }
    }

    /**
     * A chunk whose layers run over several steps computes what one pass does: with int8 weights,
     * whose kernels round per pass, every sequence's tokens equal those of whole chunks a step, bit
     * for bit, whether the layers are spread by tokens (the spread prefill takes more steps) or by
     * the decode pass's time.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"llama-gqa", "gemma2-softcap-window"})
    void spreadingAChunksLayersOverStepsChangesNoSequencesTokens(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        List<Entry> entries = entries(golden.promptIds());
        int chunk = 4;
        try (LocalModel model = LocalModel.load(golden.dir(), WeightFormat.INT8);
                NDManager manager = model.model().getNDManager().newSubManager()) {
            long[] steps = new long[3];
            List<SequenceState> whole = run(model.block(), manager, entries, chunk, chunk, steps, 0);
            List<SequenceState> spread = run(model.block(), manager, entries, chunk, 1, steps, 1);
            List<SequenceState> timed = run(
                    model.block(), manager, entries, chunk, ContinuousBatch.PREFILL_AS_LONG_AS_DECODE, steps, 2);
            for (int i = 0; i < entries.size(); i++) {
                assertArrayEquals(whole.get(i).completion().tokenIds(), spread.get(i).completion().tokenIds(),
                        name + ": sequence " + i + ", by tokens");
                assertArrayEquals(whole.get(i).completion().tokenIds(), timed.get(i).completion().tokenIds(),
                        name + ": sequence " + i + ", by time");
            }
            assertTrue(steps[1] > steps[0], "the spread prefill took " + steps[1] + " steps, whole chunks " + steps[0]);
        }
    }

    /** Sequences of different lengths and settings, joining at different steps. */
    private static List<Entry> entries(long[] full) {
        long[] longer = concat(full, reversed(full)); // past the sliding window of 8
        return List.of(
                new Entry(full, greedy(12), 0),
                new Entry(Arrays.copyOf(full, full.length / 2), sampled(9, 7L), 1),
                new Entry(longer, greedy(5), 2),
                new Entry(Arrays.copyOf(longer, 3), sampled(14, 11L), 4),
                new Entry(Arrays.copyOfRange(full, 2, full.length), greedy(7), 6)); // waits for a free row
    }

    /**
     * Runs the entries through a batch of 3 rows, each joining at its step or once a row is free;
     * {@code steps[run]} gets the steps it took.
     */
    private static List<SequenceState> run(CausalLmBlock block, NDManager manager, List<Entry> entries, int chunk,
            int stepTokens, long[] steps, int run) {
        List<SequenceState> states = new ArrayList<>();
        for (Entry entry : entries) {
            states.add(SequenceState.builder(entry.prompt(), entry.config())
                    .contextWindow(block.config().maxPositions())
                    .build()
                    .get(0));
        }
        try (ContinuousBatch batch = ContinuousBatch.builder(block, manager).maxRows(3).tokenBudget(3L * 128)
                .prefillChunk(chunk).prefillStepTokens(stepTokens).build()) {
            int next = 0;
            for (int step = 0; next < entries.size() || batch.sequences() > 0; step++) {
                while (next < entries.size() && entries.get(next).joinStep() <= step) {
                    SequenceState state = states.get(next);
                    if (!batch.canJoin(1, batch.need(state.promptLength(), state.budget()))) {
                        break;
                    }
                    assertTrue(batch.join(state));
                    next++;
                }
                batch.step();
                assertTrue(step < 500, "the batch ends");
            }
            assertEquals(0, batch.decodingRows());
            steps[run] = batch.counters().steps();
        }
        return states;
    }

    /**
     * A long prompt is prefilled a chunk a step, and every running sequence gets a token at each of
     * those steps; the joining sequence gets its first token at the step of its last chunk.
     */
    @Test
    void aChunkedPrefillInterleavesWithTheRunningSequencesDecodeSteps() throws Exception {
        GoldenCase golden = GoldenCase.load("llama-gqa");
        long[] full = golden.promptIds();
        long[] longPrompt = new long[40];
        for (int i = 0; i < longPrompt.length; i++) {
            longPrompt[i] = full[i % full.length];
        }
        try (LocalModel model = LocalModel.load(golden.dir());
                NDManager manager = model.model().getNDManager().newSubManager();
                ContinuousBatch batch = ContinuousBatch.builder(model.block(), manager)
                        .maxRows(3).tokenBudget(3L * 128)
                        .prefillChunk(4).build()) {
            int window = model.config().maxPositions();
            SequenceState[] running = new SequenceState[2];
            for (int r = 0; r < running.length; r++) {
                running[r] = SequenceState.builder(Arrays.copyOf(full, 3 + r), greedy(30)).contextWindow(window)
                        .build().get(0);
                batch.join(running[r]);
            }
            batch.step(); // the first prompt, in one chunk
            batch.step(); // the second; both decode
            SequenceState joining = SequenceState.builder(longPrompt, greedy(3)).contextWindow(window).build().get(0);
            batch.join(joining);
            for (int step = 1; step <= longPrompt.length / 4; step++) {
                int[] before = {running[0].generatedTokens(), running[1].generatedTokens()};
                batch.step();
                for (int r = 0; r < running.length; r++) {
                    assertEquals(before[r] + 1, running[r].generatedTokens(), "row " + r + " at chunk " + step);
                }
                assertEquals(step < longPrompt.length / 4 ? 0 : 2, joining.generatedTokens(),
                        "the joining sequence's first token comes with its last chunk, its second in the same step");
            }
        }
    }

    /** Many sequences joining and leaving free every array each step made: the pool's buffers stay all there is. */
    @Test
    void manyJoinsLeaveNoArraysBehind() throws Exception {
        GoldenCase golden = GoldenCase.load("llama-gqa");
        long[] full = golden.promptIds();
        try (LocalModel model = LocalModel.load(golden.dir());
                NDManager manager = model.model().getNDManager().newSubManager()) {
            CausalLmBlock block = model.block();
            int buffers = 2 * block.config().numLayers(); // the pool's keys and values per layer
            try (ContinuousBatch batch = ContinuousBatch.builder(block, manager).maxRows(4).tokenBudget(4L * 64)
                    .prefillChunk(4).build()) {
                for (int round = 0; round < 6; round++) {
                    for (int i = 0; i < 10; i++) {
                        SequenceState state = SequenceState.builder(Arrays.copyOf(full, 3 + i), greedy(2 + i % 5))
                                .contextWindow(block.config().maxPositions())
                                .build()
                                .get(0);
                        while (!batch.canJoin(1, batch.need(state.promptLength(), state.budget()))) {
                            batch.step();
                        }
                        batch.join(state);
                        batch.step();
                    }
                    while (batch.sequences() > 0) {
                        batch.step();
                    }
                    assertEquals(buffers, settledArrays(manager, buffers), "arrays held after round " + round);
                }
            }
        }
    }

    /** The arrays the manager holds once the steps' arrays are freed (the kernels may free them late). */
    static int settledArrays(NDManager manager, int expected) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        int held = manager.getManagedArrays().size();
        while (held != expected && System.nanoTime() < deadline) {
            Thread.sleep(20);
            held = manager.getManagedArrays().size();
        }
        return held;
    }

    static GenerationConfig greedy(int tokens) {
        return GenerationConfig.builder().maxNewTokens(tokens).eosTokenIds(List.of()).build();
    }

    static GenerationConfig sampled(int tokens, long seed) {
        return GenerationConfig.builder()
                .maxNewTokens(tokens)
                .eosTokenIds(List.of())
                .doSample(true)
                .temperature(0.8f)
                .seed(seed)
                .build();
    }

    static long[] concat(long[] a, long[] b) {
        long[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    static long[] reversed(long[] ids) {
        long[] out = new long[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = ids[ids.length - 1 - i];
        }
        return out;
    }
}
