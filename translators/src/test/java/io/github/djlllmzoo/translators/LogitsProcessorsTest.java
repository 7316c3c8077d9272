package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Each logits processor against distributions worked out by hand. */
class LogitsProcessorsTest {

    private static final float NEG_INF = Float.NEGATIVE_INFINITY;
    private static final long[] NO_CONTEXT = {};

    /** Logits whose softmax is exactly {@code probs} (up to float rounding). */
    private static float[] logitsOf(double... probs) {
        float[] logits = new float[probs.length];
        for (int i = 0; i < probs.length; i++) {
            logits[i] = (float) Math.log(probs[i]);
        }
        return logits;
    }

    private static float[] apply(LogitsProcessor processor, float[] logits) {
        float[] out = logits.clone();
        processor.process(NO_CONTEXT, 0, out);
        return out;
    }

    private static boolean[] kept(float[] logits) {
        boolean[] kept = new boolean[logits.length];
        for (int i = 0; i < logits.length; i++) {
            kept[i] = logits[i] != NEG_INF;
        }
        return kept;
    }

    @Test
    void repetitionPenaltyDividesPositiveAndMultipliesNegativeLogitsOfSeenTokensOnce() {
        float[] logits = {2f, -2f, 1f, 0.5f, -1f};
        long[] context = {0, 1, 0, 0, 3, 9};
        new RepetitionPenaltyProcessor(2f).process(context, 5, logits);
        // tokens 0, 1 and 3 are among the first 5 context entries; token 4 is not
        assertArrayEquals(new float[] {1f, -4f, 1f, 0.25f, -1f}, logits);
    }

    @Test
    void logitBiasAddsItsBiasToItsTokensOnly() {
        float[] logits = {1f, 2f, 3f};
        new LogitBiasProcessor(java.util.Map.of(0, -100f, 2, 0.5f, 7, 9f))
                .process(NO_CONTEXT, 0, logits);
        assertArrayEquals(new float[] {-99f, 2f, 3.5f}, logits);
    }

    @Test
    void presenceAndFrequencyPenaltiesCountTheGeneratedTokensOnlyAsOpenAiDefinesThem() {
        // prompt {1, 1, 2}, generated {2, 0, 2, 2}: counts 0 -> 1, 2 -> 3; token 1 only in the prompt
        long[] context = {1, 1, 2, 2, 0, 2, 2};
        float[] logits = {1f, 1f, 1f, 1f};
        new OccurrencePenaltyProcessor(0.5f, 0.25f, 3).process(context, context.length, logits);
        assertArrayEquals(new float[] {1f - 0.25f - 0.5f, 1f, 1f - 3 * 0.25f - 0.5f, 1f}, logits);
    }

    @Test
    void openAiAdjustmentsApplyToGreedyDecodingBeforeTemperatureAndAreRefusedOutOfRange() {
        GenerationConfig config =
                GenerationConfig.builder()
                        .doSample(true)
                        .temperature(0.5f)
                        .logitAdjustments(
                                new LogitAdjustments(java.util.Map.of(1, 5f), 0.1f, 0f))
                        .build();
        assertEquals(
                List.of(LogitBiasProcessor.class, OccurrencePenaltyProcessor.class, TemperatureProcessor.class),
                LogitsProcessorChain.forConfig(config).processors().stream()
                        .map(Object::getClass)
                        .limit(3)
                        .collect(java.util.stream.Collectors.toList()));
        assertEquals(
                2,
                LogitsProcessorChain.forConfig(config.toBuilder().greedy().build()).processors().size());
        assertTrue(
                assertThrows(IllegalArgumentException.class, () -> new LogitAdjustments(java.util.Map.of(3, 101f), 0f, 0f))
                        .getMessage()
                        .contains("logit_bias"));
        assertTrue(
                assertThrows(IllegalArgumentException.class, () -> new LogitAdjustments(java.util.Map.of(), 2.5f, 0f))
                        .getMessage()
                        .contains("presence_penalty"));
        assertTrue(
                assertThrows(IllegalArgumentException.class, () -> new LogitAdjustments(java.util.Map.of(), 0f, -3f))
                        .getMessage()
                        .contains("frequency_penalty"));
    }

    @Test
    void repetitionPenaltyBelowOneFavoursSeenTokens() {
        float[] logits = {2f, -2f};
        new RepetitionPenaltyProcessor(0.5f).process(new long[] {0, 1}, 2, logits);
        assertArrayEquals(new float[] {4f, -1f}, logits);
    }

    @Test
    void temperatureDividesEveryLogit() {
        assertArrayEquals(
                new float[] {4f, -1f, 0f, NEG_INF},
                apply(new TemperatureProcessor(0.5f), new float[] {2f, -0.5f, 0f, NEG_INF}));
    }

    @Test
    void topKKeepsTheKLargestLogitsAndTheirTies() {
        float[] logits = {0.1f, 3f, -2f, 1f, 3f, 0.5f};
        assertArrayEquals(
                new boolean[] {false, true, false, true, true, false},
                kept(apply(new TopKProcessor(3), logits)));
        assertArrayEquals(
                new boolean[] {false, true, false, false, true, false},
                kept(apply(new TopKProcessor(1), logits)), "the tie at the top is kept");
        assertArrayEquals(logits, apply(new TopKProcessor(6), logits));
        assertArrayEquals(logits, apply(new TopKProcessor(100), logits));
    }

    @Test
    void topPKeepsTheSmallestMostLikelySetReachingP() {
        // probabilities 0.5, 0.05, 0.3, 0.15: sorted 0.5, 0.3, 0.15, 0.05 with cumulative mass
        // before each 0, 0.5, 0.8, 0.95
        float[] logits = logitsOf(0.5, 0.05, 0.3, 0.15);
        assertArrayEquals(new boolean[] {true, false, false, false}, kept(apply(new TopPProcessor(0.45f), logits)));
        assertArrayEquals(new boolean[] {true, false, true, false}, kept(apply(new TopPProcessor(0.6f), logits)));
        assertArrayEquals(new boolean[] {true, false, true, true}, kept(apply(new TopPProcessor(0.9f), logits)));
        assertArrayEquals(new boolean[] {true, true, true, true}, kept(apply(new TopPProcessor(0.97f), logits)));
        assertArrayEquals(logits, apply(new TopPProcessor(1f), logits));
    }

    @Test
    void topPIgnoresTokensAlreadyRemoved() {
        // after top-k removed token 3 the rest renormalizes to 0.625, 0.25, 0.125
        float[] logits = {(float) Math.log(0.5), (float) Math.log(0.2), (float) Math.log(0.1), NEG_INF};
        assertArrayEquals(new boolean[] {true, true, false, false}, kept(apply(new TopPProcessor(0.8f), logits)));
        assertArrayEquals(new boolean[] {true, false, false, false}, kept(apply(new TopPProcessor(0.6f), logits)));
    }

    @Test
    void topPWidensItsCandidatesUntilTheyHoldP() {
        // 1000 equally likely tokens: the nucleus of 0.3051 is the first 306 (ties rank by index)
        float[] logits = new float[1000];
        boolean[] kept = kept(apply(new TopPProcessor(0.3051f), logits));
        for (int i = 0; i < kept.length; i++) {
            assertEquals(i < 306, kept[i], "token " + i);
        }
    }

    @Test
    void rankingOrdersFiniteLogitsDescendingWithTiesByIndex() {
        float[] logits = {0f, 2f, NEG_INF, 2f, -1f, Float.NaN, 5f};
        assertArrayEquals(new int[] {6, 1, 3, 0, 4}, LogitRanking.mostLikely(logits, 5));
        assertArrayEquals(new int[] {6, 1}, LogitRanking.mostLikely(logits, 2));
        assertArrayEquals(new int[] {0, 1}, LogitRanking.mostLikely(new float[] {-0f, 0f}, 2), "-0 ties with 0");
    }

    @Test
    void minPDropsTokensBelowMinPTimesTheTopProbability() {
        // probabilities 0.5, 0.3, 0.15, 0.05: min-p 0.2 → threshold 0.1; min-p 0.5 → 0.25
        float[] logits = logitsOf(0.5, 0.3, 0.15, 0.05);
        assertArrayEquals(new boolean[] {true, true, true, false}, kept(apply(new MinPProcessor(0.2f), logits)));
        assertArrayEquals(new boolean[] {true, true, false, false}, kept(apply(new MinPProcessor(0.5f), logits)));
        assertArrayEquals(new boolean[] {true, false, false, false}, kept(apply(new MinPProcessor(1f), logits)));
    }

    @Test
    void keptLogitsKeepTheirValues() {
        float[] logits = logitsOf(0.5, 0.3, 0.15, 0.05);
        float[] out = apply(new TopPProcessor(0.6f), logits);
        assertEquals(logits[0], out[0]);
        assertEquals(logits[1], out[1]);
    }

    @Test
    void theChainOfAConfigFollowsHuggingFacesOrderAndSkipsNoOps() {
        GenerationConfig sampling =
                GenerationConfig.builder()
                        .doSample(true)
                        .repetitionPenalty(1.2f)
                        .temperature(0.7f)
                        .topK(40)
                        .topP(0.9f)
                        .minP(0.05f)
                        .build();
        List<Class<?>> order =
                LogitsProcessorChain.forConfig(sampling).processors().stream().map(Object::getClass).collect(java.util.stream.Collectors.toList());
        assertEquals(
                List.of(
                        RepetitionPenaltyProcessor.class,
                        TemperatureProcessor.class,
                        TopKProcessor.class,
                        TopPProcessor.class,
                        MinPProcessor.class),
                order);
        GenerationConfig greedy = sampling.toBuilder().greedy().build();
        assertEquals(1, LogitsProcessorChain.forConfig(greedy).processors().size(), "greedy keeps only the penalty");
        GenerationConfig neutral = GenerationConfig.builder().doSample(true).topK(0).build();
        assertTrue(LogitsProcessorChain.forConfig(neutral).isEmpty());
    }

    @Test
    void processorsRejectValuesOutsideTheirRange() {
        assertThrows(IllegalArgumentException.class, () -> new RepetitionPenaltyProcessor(0f));
        assertThrows(IllegalArgumentException.class, () -> new TemperatureProcessor(0f));
        assertThrows(IllegalArgumentException.class, () -> new TopKProcessor(0));
        assertThrows(IllegalArgumentException.class, () -> new TopPProcessor(1.5f));
        assertThrows(IllegalArgumentException.class, () -> new MinPProcessor(0f));
    }
}
