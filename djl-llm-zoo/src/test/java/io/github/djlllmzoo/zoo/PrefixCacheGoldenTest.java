package io.github.djlllmzoo.zoo;

import static io.github.djlllmzoo.zoo.ContinuousBatchGoldenTest.concat;
import static io.github.djlllmzoo.zoo.ContinuousBatchGoldenTest.greedy;
import static io.github.djlllmzoo.zoo.ContinuousBatchGoldenTest.reversed;
import static io.github.djlllmzoo.zoo.ContinuousBatchGoldenTest.sampled;
import static io.github.djlllmzoo.zoo.ContinuousBatchGoldenTest.settledArrays;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.translators.BatchGenerator;
import io.github.djlllmzoo.translators.ContinuousBatch;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.PrefixCache;
import io.github.djlllmzoo.translators.SequenceState;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Sequences of a {@link ContinuousBatch} with a {@link PrefixCache}: one whose prompt starts with an
 * earlier sequence's prefills only the rest, a chunk a step, and generates what its request
 * generates alone (greedy and seeded), on a Llama golden checkpoint and on the sliding-window
 * families (the shared prefix longer than the window); many sequences leave no array behind but the
 * kept prompts.
 */
class PrefixCacheGoldenTest {

    @ParameterizedTest(name = "{0}, chunk {1}, reference kernels {2}, {3}")
    @CsvSource({
        "llama-gqa, 3, false, FLOAT32",
        "llama-gqa, 4, true, FLOAT32",
        "llama-gqa, 5, false, INT8",
        "mistral-sliding-window, 3, false, FLOAT32",
        "gemma2-softcap-window, 4, false, FLOAT32",
    })
    void aSequenceSharingAnEarlierPromptsPrefixPrefillsOnlyTheRestAndGeneratesWhatAColdRunDoes(
            String name, int chunk, boolean reference, WeightFormat weights) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        long[] full = golden.promptIds();
        long[] shared = concat(full, reversed(full)); // past the sliding window of 8
        long[] first = concat(shared, new long[] {full[0], full[1]});
        long[] greedy = concat(shared, new long[] {full[full.length - 1], full[2], full[0]});
        long[] sampled = concat(shared, new long[] {full[1]});
        try (LocalModel model = LocalModel.load(golden.dir(), weights);
                NDManager manager = model.model().getNDManager().newSubManager()) {
            CausalLmBlock block = model.block();
            if (reference) {
                block.useKernels(EngineKernels.INSTANCE);
            }
            try (ContinuousBatch batch = ContinuousBatch.builder(block, manager).maxRows(3).tokenBudget(3L * 128)
                    .prefillChunk(chunk).prefixCacheTokens(256).build()) {
                long[] cold = alone(block, manager, greedy, greedy(8));
                long[] coldSampled = alone(block, manager, sampled, sampled(8, 5L));
                run(batch, state(block, first, greedy(4)));
                assertEquals(new PrefixCache.Stats(1, 0, 0, first.length, 1, 256), batch.prefixCacheStats());

                SequenceState warm = state(block, greedy, greedy(8));
                // whole chunks only: the rest is prefilled in the chunks a cold run takes
                int reused = Math.min(commonPrefix(first, greedy), greedy.length - 1) / chunk * chunk;
                assertTrue(reused > shared.length - chunk, "the prompts share " + reused + " tokens");
                assertTrue(batch.join(warm));
                int prefillSteps = 0;
                while (warm.generatedTokens() == 0) {
                    batch.step();
                    prefillSteps++;
                }
                assertEquals((greedy.length - reused + chunk - 1) / chunk, prefillSteps,
                        name + ": the steps prefill only the " + (greedy.length - reused) + " tokens not reused");
                run(batch, null);
                assertArrayEquals(cold, warm.completion().tokenIds(), name + ": greedy");

                SequenceState warmSampled = state(block, sampled, sampled(8, 5L));
                run(batch, warmSampled);
                assertArrayEquals(coldSampled, warmSampled.completion().tokenIds(), name + ": seeded sampling");
                PrefixCache.Stats stats = batch.prefixCacheStats();
                assertEquals(3, stats.lookups());
                assertEquals(2, stats.hits());
                int reusedBySampled = Math.min(Math.max(commonPrefix(sampled, first), commonPrefix(sampled, greedy)),
                        sampled.length - 1) / chunk * chunk;
                assertEquals(reused + reusedBySampled, stats.reusedTokens());
            } finally {
                block.useKernels(null);
            }
        }
    }

    /**
     * Rounds of sequences whose prompts share prefixes of different lengths, under a prefix budget
     * that makes prompts leave: after every round the manager holds the pool's buffers and the
     * prefix cache's one store, which every kept prompt shares, and nothing once the batch is closed.
     */
    @Test
    void manySequencesSharingPrefixesHoldNoArraysButThePoolAndThePrefixStore() throws Exception {
        GoldenCase golden = GoldenCase.load("llama-gqa");
        long[] full = golden.promptIds();
        long[] shared = concat(full, reversed(full));
        try (LocalModel model = LocalModel.load(golden.dir());
                NDManager manager = model.model().getNDManager().newSubManager()) {
            CausalLmBlock block = model.block();
            int buffers = 2 * block.config().numLayers(); // keys and values per layer
            try (ContinuousBatch batch = ContinuousBatch.builder(block, manager).maxRows(4).tokenBudget(4L * 64)
                    .prefillChunk(4).prefixCacheTokens(40).build()) {
                for (int round = 0; round < 5; round++) {
                    for (int i = 0; i < 10; i++) {
                        long[] prompt = concat(Arrays.copyOf(shared, 3 + i), new long[] {full[i % full.length]});
                        SequenceState state = state(block, prompt, greedy(2 + i % 3));
                        while (!batch.canJoin(1, batch.need(state.promptLength(), state.budget()))) {
                            batch.step();
                        }
                        batch.join(state);
                        batch.step();
                    }
                    run(batch, null);
                    PrefixCache.Stats stats = batch.prefixCacheStats();
                    assertTrue(stats.cachedTokens() <= 40, "the budget holds: " + stats);
                    assertTrue(stats.hits() > 0, "prompts were shared: " + stats);
                    int expected = 2 * buffers; // the pool's, and the prefix cache's store, whatever it keeps
                    assertEquals(expected, settledArrays(manager, expected), "arrays held after round " + round);
                }
            }
            assertEquals(0, settledArrays(manager, 0), "closing the batch frees the pool and the kept prompts");
        }
    }

    /** Joins {@code state} (if any) and steps until the batch is empty. */
    private static void run(ContinuousBatch batch, SequenceState state) {
        if (state != null) {
            assertTrue(batch.join(state));
        }
        for (int step = 0; batch.sequences() > 0; step++) {
            batch.step();
            assertTrue(step < 500, "the batch ends");
        }
    }

    private static long[] alone(CausalLmBlock block, NDManager manager, long[] prompt, GenerationConfig config) {
        return new BatchGenerator(block, manager, null)
                .generate(List.of(GenerationRequest.ofIds(prompt, config)), null)
                .get(0)
                .tokenIds();
    }

    private static SequenceState state(CausalLmBlock block, long[] prompt, GenerationConfig config) {
        return SequenceState.builder(prompt, config).contextWindow(block.config().maxPositions()).build().get(0);
    }

    private static int commonPrefix(long[] a, long[] b) {
        int i = 0;
        while (i < Math.min(a.length, b.length) && a[i] == b[i]) {
            i++;
        }
        return i;
    }
}
