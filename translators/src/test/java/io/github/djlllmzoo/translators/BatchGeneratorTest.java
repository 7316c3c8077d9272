package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Model;
import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.RoundingBound;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Generation on a small random GPT-2 (vocabulary 512, ids only): every decoding control checked
 * against next-token distributions recomputed by independent full forward passes.
 */
class BatchGeneratorTest {

    private static final int WINDOW = 64;
    private static final long[] PROMPT_A = {5, 17, 300, 42, 9, 101, 77};
    private static final long[] PROMPT_B = {400, 3};
    private static final long[] PROMPT_C = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

    private static Model model;
    private static CausalLmBlock block;
    private static NDManager manager;
    private static BatchGenerator generator;

    @BeforeAll
    static void load() throws Exception {
        model = TinyModels.gpt2(TinyModels.SMALL_VOCAB, WINDOW, 7);
        block = (CausalLmBlock) model.getBlock();
        manager = model.getNDManager();
        generator = new BatchGenerator(block, manager, null);
    }

    @AfterAll
    static void close() {
        model.close();
    }

    private static GenerationConfig.Builder config(int maxNewTokens) {
        return GenerationConfig.builder().maxNewTokens(maxNewTokens);
    }

    private static GenerationResult generate(long[] prompt, GenerationConfig config) {
        return generator.generate(List.of(GenerationRequest.ofIds(prompt, config)), config).get(0);
    }

    private static float[] nextLogits(long[] prompt, long[] generated, int step) {
        return ModelLogits.next(block, manager, ModelLogits.concat(prompt, ModelLogits.head(generated, step)));
    }

    private static int argmax(float[] logits) {
        int best = 0;
        for (int i = 1; i < logits.length; i++) {
            if (logits[i] > logits[best]) {
                best = i;
            }
        }
        return best;
    }

    /**
     * How far the logits the generator computes with its cache and those {@link #nextLogits}
     * recomputes without one may differ: float32 rounding alone.
     */
    private static float logitNoise(float[] logits, long[] prompt, int step) {
        return RoundingBound.ofLogits(block.config(), prompt.length + step, logits);
    }

    /**
     * Tokens whose logit beats the token's by more than the two computations' rounding (each logit
     * off by up to {@code noise}).
     */
    private static int strictlyMoreLikely(float[] logits, long token, float noise) {
        int count = 0;
        for (float x : logits) {
            if (x > logits[(int) token] + 2 * noise) {
                count++;
            }
        }
        return count;
    }

    @Test
    void greedyPicksTheArgmaxOfAFullForwardAtEveryStep() {
        GenerationResult result = generate(PROMPT_A, config(20).build());
        long[] ids = result.tokenIds();
        assertEquals(20, ids.length);
        assertEquals(FinishReason.LENGTH, result.finishReason());
        for (int step = 0; step < ids.length; step++) {
            assertEquals(argmax(nextLogits(PROMPT_A, ids, step)), ids[step], "step " + step);
        }
        assertNull(result.text());
    }

    @Test
    void theSameSeedGivesTheSameTokensAndAnotherSeedOthers() {
        GenerationConfig sampled = config(24).doSample(true).temperature(2f).seed(11L).build();
        long[] first = generate(PROMPT_A, sampled).tokenIds();
        assertArrayEquals(first, generate(PROMPT_A, sampled).tokenIds());
        long[] other = generate(PROMPT_A, sampled.toBuilder().seed(12L).build()).tokenIds();
        assertFalse(Arrays.equals(first, other));
    }

    @Test
    void topKOneAndTemperatureZeroBothEqualGreedy() {
        long[] greedy = generate(PROMPT_C, config(16).build()).tokenIds();
        GenerationConfig topK1 = config(16).doSample(true).temperature(3f).topK(1).seed(1L).build();
        GenerationConfig temperature0 = config(16).doSample(true).temperature(0f).seed(1L).build();
        assertTrue(temperature0.isGreedy());
        assertArrayEquals(greedy, generate(PROMPT_C, topK1).tokenIds());
        assertArrayEquals(greedy, generate(PROMPT_C, temperature0).tokenIds());
    }

    @Test
    void everyTopKSampleIsAmongTheKMostLikelyTokensAtItsStep() {
        int k = 4;
        int outsideWithoutTopK = 0;
        for (long seed = 0; seed < 4; seed++) {
            GenerationConfig unfiltered = config(16).doSample(true).temperature(4f).topK(0).seed(seed).build();
            long[] free = generate(PROMPT_A, unfiltered).tokenIds();
            long[] ids = generate(PROMPT_A, unfiltered.toBuilder().topK(k).build()).tokenIds();
            for (int step = 0; step < ids.length; step++) {
                float[] logits = nextLogits(PROMPT_A, ids, step);
                float noise = logitNoise(logits, PROMPT_A, step);
                assertTrue(strictlyMoreLikely(logits, ids[step], noise) < k, "seed " + seed + " step " + step);
            }
            for (int step = 0; step < free.length; step++) {
                float[] logits = nextLogits(PROMPT_A, free, step);
                if (strictlyMoreLikely(logits, free[step], logitNoise(logits, PROMPT_A, step)) >= k) {
                    outsideWithoutTopK++;
                }
            }
        }
        assertTrue(outsideWithoutTopK > 0, "at this temperature unfiltered sampling leaves the top k");
    }

    @Test
    void everyTopPSampleIsInsideTheNucleusAtItsStep() {
        float p = 0.6f;
        float temperature = 1.5f;
        int outsideWithoutTopP = 0;
        for (long seed = 0; seed < 4; seed++) {
            GenerationConfig unfiltered =
                    config(16).doSample(true).temperature(temperature).topK(0).seed(seed).build();
            long[] ids = generate(PROMPT_B, unfiltered.toBuilder().topP(p).build()).tokenIds();
            long[] free = generate(PROMPT_B, unfiltered).tokenIds();
            for (int step = 0; step < ids.length; step++) {
                float[] logits = nextLogits(PROMPT_B, ids, step);
                // logits off by up to the noise move each probability by a relative 2 noise / T
                double slack = 2 * logitNoise(logits, PROMPT_B, step) / temperature;
                assertTrue(massAbove(logits, ids[step], temperature) < p + slack, "seed " + seed + " step " + step);
            }
            for (int step = 0; step < free.length; step++) {
                if (massAbove(nextLogits(PROMPT_B, free, step), free[step], temperature) >= p) {
                    outsideWithoutTopP++;
                }
            }
        }
        assertTrue(outsideWithoutTopP > 0, "unfiltered sampling leaves the nucleus");
    }

    /** The probability of the tokens more likely than {@code token}, at the given temperature. */
    private static double massAbove(float[] logits, long token, float temperature) {
        double[] probs = ModelLogits.probabilities(logits, temperature);
        double above = 0;
        for (int i = 0; i < probs.length; i++) {
            if (logits[i] > logits[(int) token]) {
                above += probs[i];
            }
        }
        return above;
    }

    @Test
    void everyMinPSampleIsAtLeastMinPTimesTheTopProbability() {
        float minP = 0.2f;
        float temperature = 2f;
        for (long seed = 0; seed < 4; seed++) {
            GenerationConfig config =
                    config(16).doSample(true).temperature(temperature).topK(0).minP(minP).seed(seed).build();
            long[] ids = generate(PROMPT_C, config).tokenIds();
            for (int step = 0; step < ids.length; step++) {
                float[] logits = nextLogits(PROMPT_C, ids, step);
                double[] probs = ModelLogits.probabilities(logits, temperature);
                double top = Arrays.stream(probs).max().getAsDouble();
                // both probabilities move by a relative 2 noise / T between the two computations
                double slack = 4 * minP * top * logitNoise(logits, PROMPT_C, step) / temperature;
                assertTrue(probs[(int) ids[step]] >= minP * top - slack, "seed " + seed + " step " + step);
            }
        }
    }

    @Test
    void repetitionPenaltyGreedyPicksTheArgmaxOfPenalizedLogits() {
        float penalty = 3f;
        GenerationResult result = generate(PROMPT_A, config(16).repetitionPenalty(penalty).build());
        long[] ids = result.tokenIds();
        long[] plain = generate(PROMPT_A, config(16).build()).tokenIds();
        assertFalse(Arrays.equals(plain, ids), "the penalty changes greedy output on this model");
        for (int step = 0; step < ids.length; step++) {
            float[] logits = nextLogits(PROMPT_A, ids, step);
            Set<Long> seen = new HashSet<>();
            for (long id : ModelLogits.concat(PROMPT_A, ModelLogits.head(ids, step))) {
                seen.add(id);
            }
            for (long id : seen) {
                float x = logits[(int) id];
                logits[(int) id] = x > 0 ? x / penalty : x * penalty;
            }
            assertEquals(argmax(logits), ids[step], "step " + step);
        }
    }

    @Test
    void eosEndsASequenceAndIsNotPartOfIt() {
        long[] free = generate(PROMPT_A, config(12).build()).tokenIds();
        int eos = (int) free[5];
        int firstEos = 0;
        while (free[firstEos] != eos) {
            firstEos++;
        }
        GenerationResult stopped = generate(PROMPT_A, config(12).eosTokenIds(List.of(eos)).build());
        assertEquals(FinishReason.EOS, stopped.finishReason());
        assertArrayEquals(Arrays.copyOf(free, firstEos), stopped.tokenIds());
    }

    @Test
    void batchedRowsEqualGeneratingEachAloneWhenGreedy() {
        long[] aloneA = generate(PROMPT_A, config(14).build()).tokenIds();
        List<GenerationRequest> requests =
                List.of(
                        GenerationRequest.ofIds(PROMPT_A, config(14).build()),
                        GenerationRequest.ofIds(PROMPT_B, config(9).build()),
                        GenerationRequest.ofIds(PROMPT_C, config(20).eosTokenIds(List.of((int) aloneA[2])).build()),
                        GenerationRequest.ofIds(PROMPT_A, config(14).eosTokenIds(List.of((int) aloneA[3])).build()));
        List<GenerationResult> batched = generator.generate(requests, null);
        for (int i = 0; i < requests.size(); i++) {
            GenerationRequest request = requests.get(i);
            GenerationResult alone = generate(request.promptIds(), request.config());
            assertArrayEquals(alone.tokenIds(), batched.get(i).tokenIds(), "request " + i);
            assertEquals(alone.finishReason(), batched.get(i).finishReason(), "request " + i);
        }
        assertEquals(FinishReason.EOS, batched.get(3).finishReason());
        int firstEos = 0;
        while (aloneA[firstEos] != aloneA[3]) {
            firstEos++;
        }
        assertEquals(firstEos, batched.get(3).tokenIds().length);
    }

    @Test
    void batchedRowsEqualGeneratingEachAloneWhenSampling() {
        List<GenerationRequest> requests = new ArrayList<>();
        long[][] prompts = {PROMPT_A, PROMPT_B, PROMPT_C};
        for (int i = 0; i < prompts.length; i++) {
            GenerationConfig config =
                    config(12 + i).doSample(true).temperature(1.5f).topK(20).topP(0.9f).seed(100L + i).build();
            requests.add(GenerationRequest.ofIds(prompts[i], config));
        }
        List<GenerationResult> batched = generator.generate(requests, null);
        for (int i = 0; i < requests.size(); i++) {
            GenerationResult alone = generate(prompts[i], requests.get(i).config());
            assertArrayEquals(alone.tokenIds(), batched.get(i).tokenIds(), "request " + i);
        }
    }

    @Test
    void numReturnSequencesGivesThatManySeededSequences() {
        GenerationConfig config =
                config(10).doSample(true).temperature(3f).topK(0).seed(5L).numReturnSequences(3).build();
        GenerationResult result = generate(PROMPT_B, config);
        assertEquals(3, result.completions().size());
        GenerationResult again = generate(PROMPT_B, config);
        Set<String> distinct = new HashSet<>();
        for (int n = 0; n < 3; n++) {
            long[] ids = result.completions().get(n).tokenIds();
            assertArrayEquals(again.completions().get(n).tokenIds(), ids);
            distinct.add(Arrays.toString(ids));
        }
        assertEquals(3, distinct.size());
        assertEquals(30, result.timings().generatedTokens());
    }

    @Test
    void logprobsAreTheModelsLogProbabilitiesOfTheNewTokens() {
        GenerationConfig config =
                config(10).doSample(true).temperature(2f).topK(10).seed(3L).returnLogprobs(true).build();
        GenerationResult result = generate(PROMPT_A, config);
        float[] logprobs = result.completions().get(0).logprobs();
        long[] ids = result.tokenIds();
        assertEquals(ids.length, logprobs.length);
        float[] scored = new Generator(block, manager).scoreTokens(ModelLogits.concat(PROMPT_A, ids));
        for (int i = 0; i < ids.length; i++) {
            // the logits' difference, twice through log-softmax, and the rounding of its sum of
            // exponentials (terms at most 1, relative to a sum of at least 1)
            float noise = logitNoise(nextLogits(PROMPT_A, ids, i), PROMPT_A, i);
            assertEquals(scored[PROMPT_A.length - 1 + i], logprobs[i],
                    2 * noise + RoundingBound.ofSums(TinyModels.SMALL_VOCAB, 1), "token " + i);
        }
        assertNull(generate(PROMPT_A, config.toBuilder().returnLogprobs(false).build()).completions().get(0).logprobs());
    }

    @Test
    void topLogprobsAreTheMostLikelyTokensOfEachPositionWithTheirLogProbabilities() {
        int k = 5;
        GenerationConfig config =
                config(6).doSample(true).seed(5L).returnLogprobs(true).topLogprobs(k).build();
        Completion c = generate(PROMPT_A, config).completions().get(0);
        long[] ids = c.tokenIds();
        assertEquals(ids.length, c.topLogprobs().size());
        for (int i = 0; i < ids.length; i++) {
            List<TokenLogprob> top = c.topLogprobs().get(i);
            assertEquals(k, top.size());
            float[] logits = nextLogits(PROMPT_A, ids, i);
            float noise = logitNoise(logits, PROMPT_A, i);
            double normalizer = Sampler.logNormalizer(logits);
            for (int j = 0; j < k; j++) {
                TokenLogprob t = top.get(j);
                if (j > 0) {
                    assertTrue(top.get(j - 1).logprob() >= t.logprob(), "most likely first");
                }
                // the same tolerance as the chosen token's log-probability above
                assertEquals(logits[(int) t.tokenId()] - normalizer, t.logprob(),
                        2 * noise + RoundingBound.ofSums(TinyModels.SMALL_VOCAB, 1), "token " + i);
                // no token left out is clearly more likely than the last one kept
                assertTrue(strictlyMoreLikely(logits, top.get(k - 1).tokenId(), noise) < k);
            }
            // the chosen token, when among the alternatives, has its own log-probability there
            for (TokenLogprob t : top) {
                if (t.tokenId() == ids[i]) {
                    assertEquals(c.logprobs()[i], t.logprob(), 0f);
                }
            }
        }
        assertNull(generate(PROMPT_A, config.toBuilder().topLogprobs(0).build()).completions().get(0).topLogprobs());
    }

    @Test
    void theContextWindowEndsSequencesAndSplitsBatchesThatWouldOverflowIt() {
        long[] longPrompt = new long[WINDOW - 3];
        for (int i = 0; i < longPrompt.length; i++) {
            longPrompt[i] = (i * 37L) % TinyModels.SMALL_VOCAB;
        }
        GenerationConfig config = config(30).build();
        GenerationResult full = generate(longPrompt, config);
        assertEquals(3, full.tokenIds().length);
        assertEquals(FinishReason.LENGTH, full.finishReason());
        List<GenerationResult> batched =
                generator.generate(
                        List.of(GenerationRequest.ofIds(longPrompt, config), GenerationRequest.ofIds(PROMPT_B, config)),
                        null);
        assertArrayEquals(full.tokenIds(), batched.get(0).tokenIds());
        assertArrayEquals(generate(PROMPT_B, config).tokenIds(), batched.get(1).tokenIds());
        assertEquals(30, batched.get(1).tokenIds().length);
    }

    @Test
    void badPromptsAreRejectedWithTheReason() {
        GenerationConfig config = config(4).build();
        assertTrue(assertThrows(IllegalArgumentException.class, () -> generate(new long[0], config))
                .getMessage().contains("no tokens"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> generate(new long[] {512}, config))
                .getMessage().contains("vocabulary"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                        () -> generator.generate(List.of(GenerationRequest.of("hi", config)), config))
                .getMessage().contains("tokenizer"));
        GenerationConfig stops = config.toBuilder().stopStrings(List.of("x")).build();
        assertTrue(assertThrows(IllegalArgumentException.class, () -> generate(PROMPT_A, stops))
                .getMessage().contains("stop strings"));
    }

    @Test
    void timingsCountTheTokensAndOrderFirstTokenBeforeTheEnd() {
        GenerationResult result = generate(PROMPT_C, config(8).build());
        GenerationTimings timings = result.timings();
        assertEquals(8, timings.generatedTokens());
        assertEquals(PROMPT_C.length, result.promptTokens());
        assertTrue(timings.timeToFirstToken().compareTo(timings.total()) <= 0);
        assertTrue(timings.tokensPerSecond() > 0);
        assertNotEquals(0, timings.timeToFirstToken().toNanos());
    }

    @Test
    void aCancelledRequestStopsAtTheNextStepWhileItsBatchMateRunsOn() {
        GenerationConfig config = config(20).build();
        int cancelAfter = 3;
        GenerationListener cancelling =
                new GenerationListener() {
                    private int tokens;

                    @Override
                    public void onText(int sequence, String piece) {}

                    @Override
                    public void onToken(int sequence, long tokenId) {
                        tokens++;
                    }

                    @Override
                    public boolean isCancelled() {
                        return tokens >= cancelAfter;
                    }
                };
        List<GenerationResult> batch =
                generator.generate(
                        List.of(
                                GenerationRequest.ofIds(PROMPT_A, config).withListener(cancelling),
                                GenerationRequest.ofIds(PROMPT_B, config)),
                        config);
        long[] alone = generate(PROMPT_A, config).tokenIds();
        assertEquals(FinishReason.CANCELLED, batch.get(0).finishReason());
        assertArrayEquals(Arrays.copyOf(alone, cancelAfter), batch.get(0).tokenIds());
        assertEquals(FinishReason.LENGTH, batch.get(1).finishReason());
        assertArrayEquals(generate(PROMPT_B, config).tokenIds(), batch.get(1).tokenIds());
        GenerationListener cancelledBefore =
                new GenerationListener() {
                    @Override
                    public void onText(int sequence, String piece) {}

                    @Override
                    public boolean isCancelled() {
                        return true;
                    }
                };
        GenerationResult none =
                generator.generate(List.of(GenerationRequest.ofIds(PROMPT_A, config).withListener(cancelledBefore)), config)
                        .get(0);
        assertEquals(FinishReason.CANCELLED, none.finishReason());
        assertEquals(0, none.tokenIds().length);
    }
}
