package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.translators.Completion;
import io.github.djlllmzoo.translators.ContinuousBatch;
import io.github.djlllmzoo.translators.ContinuousBatchBuilder;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.PassTimer;
import io.github.djlllmzoo.translators.SequenceState;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Where the model's prefill splits exactly (compressed weights on the CPU kernels), a {@link
 * ContinuousBatch} prefills several whole chunks of a prompt in one pass ({@link
 * ContinuousBatchBuilder#prefillPassChunks}) and a prompt's last partial chunk alone: each sequence
 * then generates the same tokens, its prompt's logits the same bit for bit, however many chunks a
 * pass takes, and a prompt reused from the prefix cache at a chunk boundary inside a cold run's pass generates
 * what its cold run did, log-probabilities included. Float32 weights keep one chunk a pass.
 */
class ContinuousBatchPassChunksTest {

    /** More than the 8 rows the decode kernels take, so that every whole chunk takes the GEMM. */
    private static final int CHUNK = 16;

    private static final int PASS_CHUNKS = 4;

    /** Prompt lengths: under a chunk, whole chunks, a pass and more with a partial chunk left. */
    private static final int[] LENGTHS = {11, 32, 70, 100};

    @ParameterizedTest
    @EnumSource(value = WeightFormat.class, names = {"INT8", "INT4", "Q4_K"})
    void compressedPassesOfFourChunksGiveThePromptLogitsAndTokensOfTwoChunksAPass(WeightFormat format)
            throws Exception {
        GoldenCase golden = GoldenCase.load("llama-gqa");
        try (LocalModel model = LocalModel.load(golden.dir());
                NDManager manager = model.model().getNDManager().newSubManager()) {
            CausalLmBlock block = compressed(model, format);
            List<Integer> severalPasses = new ArrayList<>();
            List<Completion> several = run(block, manager, PASS_CHUNKS, golden.promptIds(), 0, severalPasses);
            List<Integer> twoPasses = new ArrayList<>();
            List<Completion> two = run(block, manager, 2, golden.promptIds(), 0, twoPasses);
            for (int i = 0; i < LENGTHS.length; i++) {
                assertArrayEquals(two.get(i).tokenIds(), several.get(i).tokenIds(), format + " prompt " + i);
                // the first token's log-probability is the prefill's; later ones come from decode passes
                // whose rows differ between the two schedules, as they do with any two arrival orders
                assertEquals(two.get(i).logprobs()[0], several.get(i).logprobs()[0], 0f, format + " prompt " + i);
            }
            assertTrue(severalPasses.contains(PASS_CHUNKS * CHUNK), "passes of " + severalPasses);
            assertTrue(twoPasses.contains(2 * CHUNK) && !twoPasses.contains(PASS_CHUNKS * CHUNK), "passes of " + twoPasses);
            for (List<Integer> passes : List.of(severalPasses, twoPasses)) {
                // no pass of the decode kernels' few rows but a whole short prompt's (11 tokens)
                assertTrue(passes.stream().allMatch(t -> t >= CHUNK || t == LENGTHS[0]), "passes of " + passes);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = WeightFormat.class, names = {"INT8", "Q4_K"})
    void aPrefixReusedInsideAColdRunsPassGivesTheColdRunsTokensAndLogprobs(WeightFormat format) throws Exception {
        GoldenCase golden = GoldenCase.load("llama-gqa");
        try (LocalModel model = LocalModel.load(golden.dir());
                NDManager manager = model.model().getNDManager().newSubManager()) {
            CausalLmBlock block = compressed(model, format);
            long[] prompt = prompt(golden.promptIds(), 110); // cold: passes of 64 and 46 tokens
            try (ContinuousBatch batch = builder(block, manager, PASS_CHUNKS).prefixCacheTokens(512).build()) {
                Completion cold = runOne(batch, block, prompt);
                Completion warm = runOne(batch, block, prompt);
                // 80 positions, a block boundary inside the cold run's second pass, 30 left to compute
                assertEquals(80, batch.prefixCacheStats().reusedTokens());
                assertArrayEquals(cold.tokenIds(), warm.tokenIds(), format.toString());
                assertArrayEquals(cold.logprobs(), warm.logprobs(), 0f, format.toString());
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = WeightFormat.class, names = {"FLOAT32"})
    void float32PassesTakeOneChunk(WeightFormat format) throws Exception {
        GoldenCase golden = GoldenCase.load("llama-gqa");
        try (LocalModel model = LocalModel.load(golden.dir());
                NDManager manager = model.model().getNDManager().newSubManager()) {
            CausalLmBlock block = model.block();
            assertFalse(block.kernels().prefillSplitsExactly(block.heldFormats(), CHUNK));
            List<Integer> passes = new ArrayList<>();
            run(block, manager, PASS_CHUNKS, golden.promptIds(), 0, passes);
            assertEquals(CHUNK, passes.stream().mapToInt(Integer::intValue).max().orElseThrow(), format.toString());
        }
    }

    /** The model's weights held as {@code format}; the test is skipped where its prefill does not split exactly. */
    private static CausalLmBlock compressed(LocalModel model, WeightFormat format) {
        CausalLmBlock block = model.block();
        block.compressWeights(format);
        assumeTrue(block.kernels().prefillSplitsExactly(block.heldFormats(), CHUNK),
                "no exact " + format + " prefill split on this CPU");
        return block;
    }

    private static ContinuousBatchBuilder builder(CausalLmBlock block, NDManager manager, int passChunks) {
        return ContinuousBatch.builder(block, manager)
                .maxRows(2)
                .tokenBudget(4L * block.config().maxPositions())
                .prefillRows(2)
                .prefillChunk(CHUNK)
                .prefillPassChunks(passChunks);
    }

    /** Every prompt of {@link #LENGTHS} through one batch; records each prefill pass's tokens. */
    private static List<Completion> run(
            CausalLmBlock block, NDManager manager, int passChunks, long[] golden, long prefix, List<Integer> passes)
            throws Exception {
        PassTimer timer = new PassTimer() {
            @Override
            public void decodePass(int rows, long nanos, boolean afterPrefill) {}

            @Override
            public void prefillLayers(int tokens, int layers, long nanos) {
                passes.add(tokens);
            }
        };
        List<SequenceState> states = new ArrayList<>();
        try (ContinuousBatch batch = builder(block, manager, passChunks).prefixCacheTokens(prefix).passTimer(timer).build()) {
            for (int length : LENGTHS) {
                SequenceState state = state(block, prompt(golden, length));
                states.add(state);
                assertTrue(batch.join(state));
            }
            while (batch.sequences() > 0) {
                batch.step();
            }
        }
        List<Completion> completions = new ArrayList<>();
        for (SequenceState state : states) {
            completions.add(state.completion());
        }
        return completions;
    }

    private static Completion runOne(ContinuousBatch batch, CausalLmBlock block, long[] prompt) throws Exception {
        SequenceState state = state(block, prompt);
        assertTrue(batch.join(state));
        while (batch.sequences() > 0) {
            batch.step();
        }
        return state.completion();
    }

    private static SequenceState state(CausalLmBlock block, long[] prompt) {
        GenerationConfig config = GenerationConfig.builder()
                .maxNewTokens(6)
                .eosTokenIds(List.of())
                .returnLogprobs(true)
                .build();
        return SequenceState.builder(prompt, config).contextWindow(block.config().maxPositions()).build().get(0);
    }

    /** {@code length} tokens of the golden prompt, repeated where it is short. */
    private static long[] prompt(long[] golden, int length) {
        long[] prompt = new long[length];
        for (int t = 0; t < length; t++) {
            prompt[t] = golden[t % golden.length];
        }
        return prompt;
    }
}
