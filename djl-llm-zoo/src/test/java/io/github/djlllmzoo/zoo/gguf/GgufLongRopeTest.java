package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import io.github.djlllmzoo.blocks.config.RopeScaling;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Phi-3's LongRoPE from a checkpoint and from the GGUF file llama.cpp's converter would write of it
 * ({@code rope_factors_long}/{@code _short}, {@code rope.scaling.original_context_length}, {@code
 * rope.scaling.attn_factor}), for {@link LongRopePhi3} pre-trained on 16 positions (the long
 * factors) or on all 128 (the short ones).
 */
class GgufLongRopeTest {

    /** Same weights, same float32 operations: only summation order may differ between two loads. */
    private static final double SAME_MODEL_TOLERANCE = 1e-4;

    /** A greedy step whose top-2 margin is under this may flip with float32 rounding (as the families' test). */
    private static final double DECIDED_MARGIN = 1e-3;

    @TempDir Path tmp;

    private static long[] longs(JsonArray a) {
        long[] out = new long[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).getAsLong();
        }
        return out;
    }

    private static JsonObject answers() throws Exception {
        return JsonParser.parseString(Files.readString(LongRopePhi3.golden().resolve("golden.json"), StandardCharsets.UTF_8))
                .getAsJsonObject();
    }

    private Path longRopePhi3(int original) throws Exception {
        return LongRopePhi3.write(tmp.resolve("phi3-longrope-" + original), original);
    }

    private static double maxDifference(float[] a, float[] b) {
        assertEquals(a.length, b.length);
        double max = 0;
        for (int i = 0; i < a.length; i++) {
            max = Math.max(max, Math.abs(a[i] - b[i]));
        }
        return max;
    }

    @ParameterizedTest
    @ValueSource(ints = {16, 128})
    void safetensorsAndGgufScoreTheSameAndConvertWritesLongRope(int original) throws Exception {
        Path dir = longRopePhi3(original);
        long[] prompt = longs(answers().getAsJsonArray("prompt_ids"));
        Path file = tmp.resolve("phi3-longrope-" + original + ".gguf");
        GoldenGguf.write(dir, file, GgufType.F32);
        float[] fromCheckpoint;
        RopeScaling scaling;
        try (LocalModel model = LocalModel.load(dir)) {
            fromCheckpoint = model.generator().scoreTokens(prompt);
            scaling = ((LlamaConfig) model.config()).ropeScaling();
        }
        float[] unscaled;
        try (LocalModel model = LocalModel.load(LongRopePhi3.golden())) {
            unscaled = model.generator().scoreTokens(prompt);
        }
        try (LocalModel model = LocalModel.load(file)) {
            float[] fromGguf = model.generator().scoreTokens(prompt);
            double difference = maxDifference(fromGguf, fromCheckpoint);
            double fromUnscaled = maxDifference(fromCheckpoint, unscaled);
            System.out.printf(Locale.ROOT, "longrope original %d: max |gguf - safetensors| = %.3g, |longrope - none| = %.3g%n",
                    original, difference, fromUnscaled);
            assertTrue(difference <= SAME_MODEL_TOLERANCE, "gguf vs safetensors: " + difference);
            // the factors change the model: the comparison above sees them
            assertTrue(fromUnscaled > 100 * SAME_MODEL_TOLERANCE, "longrope vs none: " + fromUnscaled);
            // the config.json `llmzoo convert` publishes with the weights: the same scaling, to float32 factors
            RopeScaling converted = LlamaConfig.read(model.dir().resolve("config.json")).ropeScaling();
            assertEquals(RopeScaling.Type.LONGROPE, converted.type());
            assertEquals(original, converted.originalMaxPositionEmbeddings());
            assertFactors(scaling.shortFactor(), converted.shortFactor());
            assertFactors(scaling.longFactor(), converted.longFactor());
            // attn_factor is stored as float32
            assertEquals(scaling.attentionFactor(), converted.attentionFactor(), Math.ulp((float) scaling.attentionFactor()));
        }
    }

    private static void assertFactors(List<Double> expected, List<Double> actual) {
        assertEquals(expected.size(), actual.size());
        for (int i = 0; i < expected.size(); i++) {
            // float32 in the file: half an ulp of float32
            assertEquals(expected.get(i), actual.get(i), Math.ulp(expected.get(i).floatValue()));
        }
    }

    /**
     * llama.cpp picks the long factors when its context ({@code greedy_ids}: prompt + new tokens + 8
     * = 52) exceeds the original 16, the short ones when not over 128: the factor sets we pick for
     * our window of 128.
     */
    @ParameterizedTest
    @ValueSource(ints = {16, 128})
    void greedyIdsAreLlamaCppsUnderTheFactorSetBothPick(int original) throws Exception {
        LlamaCppPeer peer = LlamaCppPeer.require();
        JsonObject answers = answers();
        long[] prompt = longs(answers.getAsJsonArray("prompt_ids"));
        int steps = answers.getAsJsonArray("greedy_ids").size();
        Path file = tmp.resolve("phi3-longrope-" + original + "-vocab.gguf");
        GoldenGguf.write(longRopePhi3(original), file, GgufType.F32, true);
        long[] expected = peer.greedy(file, prompt, steps, DECIDED_MARGIN);
        try (LocalModel model = LocalModel.load(file)) {
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(expected.length).eosTokenIds(List.of()).build();
            long[] ours = model.generator().generateGreedy(prompt, config).tokenIds();
            assertTrue(expected.length > 0, "llama.cpp's first step is undecided");
            assertArrayEquals(expected, ours);
            System.out.printf(Locale.ROOT, "longrope original %d: %d greedy ids equal llama.cpp's%n", original,
                    expected.length);
        }
    }
}
