package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDManager;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
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
 * The golden checkpoints of the families llama.cpp implements, written as F32 GGUF files: llama.cpp's
 * greedy ids ({@code greedy_ids --kv f32}) equal ours from the same file, up to the first step whose
 * top-2 margin float32 rounding could flip, and its log-probabilities of the prompt ({@code
 * score_ids}) ours. Skipped where the peer is not built, or predates the architecture (the kit's
 * c392e50 predates Qwen3 and Gemma 3: {@code scripts/llamacpp-newer.sh} builds a newer one). Gemma
 * 3's golden case is run as llama.cpp can express it ({@link LlamaCppPeer#gemma3AsLlamaCppRunsIt}).
 * (Not compared: Gemma 2's golden case, whose query_pre_attn_scalar is one llama.cpp cannot express;
 * Mistral's, whose sliding window llama.cpp's llama architecture ignores.)
 */
class GgufLlamaCppFamiliesTest {

    private static final double DECIDED_MARGIN = 1e-3;

    /**
     * Two float32 implementations of the same model, summing in different orders: log-probabilities
     * of about -10 agree to a few float32 ulps of the logits over the few layers of a golden case.
     */
    private static final double SAME_MODEL_TOLERANCE = 1e-4;

    /**
     * Where the MLP is a GELU: ggml looks GELU up at its input rounded to float16 ({@code
     * GGML_GELU_FP16}, ggml-cpu/vec.h, old and new llama.cpp alike), each activation off by up to
     * 2^-11 of itself; four times that through the golden cases' few layers.
     */
    private static final double GELU_TOLERANCE = 4 * 0x1p-11;

    @TempDir Path tmp;

    @ParameterizedTest
    @ValueSource(strings = {
        "llama-gqa", "llama-mqa-tied-bf16", "llama3-rope-scaling", "qwen2-bias", "qwen2-tied-bf16", "phi3-fused", "gemma-bf16",
        "qwen3-qknorm", "gemma3-local-global"
    })
    void greedyIdsAndLogprobsAreLlamaCpps(String name) throws Exception {
        Path golden = Path.of(System.getProperty("llmzoo.testdata"), "golden", name);
        JsonObject answers =
                JsonParser.parseString(Files.readString(golden.resolve("golden.json"), StandardCharsets.UTF_8))
                        .getAsJsonObject();
        JsonObject goldenConfig = JsonParser.parseString(Files.readString(golden.resolve("config.json"))).getAsJsonObject();
        String modelType = goldenConfig.get("model_type").getAsString();
        String activation = (goldenConfig.has("hidden_activation") ? goldenConfig.get("hidden_activation")
                : goldenConfig.get("hidden_act")).getAsString();
        double tolerance = activation.startsWith("gelu") ? GELU_TOLERANCE : SAME_MODEL_TOLERANCE;
        // the golden answers are of the golden config, which Gemma 3's case changes
        float[] reference = architecture(modelType).equals("gemma3") ? null
                : floats(answers.getAsJsonArray("prompt_logprobs"));
        String architecture = architecture(modelType);
        LlamaCppPeer peer = LlamaCppPeer.require(architecture);
        if (architecture.equals("gemma3")) {
            try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
                golden = LlamaCppPeer.gemma3AsLlamaCppRunsIt(golden, tmp.resolve("gemma3"), manager);
            }
        }
        JsonArray ids = answers.getAsJsonArray("prompt_ids");
        long[] prompt = new long[ids.size()];
        for (int i = 0; i < prompt.length; i++) {
            prompt[i] = ids.get(i).getAsLong();
        }
        Path file = tmp.resolve(name + ".gguf");
        GoldenGguf.write(golden, file, GgufType.F32, true);
        long[] expected = peer.greedy(file, prompt, answers.getAsJsonArray("greedy_ids").size(), DECIDED_MARGIN);
        float[] theirs = peer.score(file, prompt);
        try (LocalModel model = LocalModel.load(file)) {
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(expected.length).eosTokenIds(List.of()).build();
            long[] ours = model.generator().generateGreedy(prompt, config).tokenIds();
            float[] logprobs = model.generator().scoreTokens(prompt);
            double difference = GgufGoldenCasesTest.maxDifference(logprobs, theirs);
            System.out.printf(Locale.ROOT,
                    "gguf family parity %s (llama.cpp %s): %d greedy ids equal llama.cpp's, logprobs within %.2g%s%n",
                    name, peer.commit(), expected.length, difference, reference == null ? ""
                            : String.format(Locale.ROOT, " (from Hugging Face's float64: ours %.2g, llama.cpp's %.2g)",
                                    GgufGoldenCasesTest.maxDifference(logprobs, reference),
                                    GgufGoldenCasesTest.maxDifference(theirs, reference)));
            assertTrue(expected.length > 0, name + ": llama.cpp's first step is undecided");
            assertArrayEquals(expected, ours, name);
            assertTrue(difference <= tolerance, name + ": log-probabilities differ by " + difference);
        }
    }

    private static String architecture(String modelType) {
        return modelType.equals("gemma3_text") ? "gemma3" : modelType;
    }

    private static float[] floats(JsonArray values) {
        float[] out = new float[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = values.get(i).getAsFloat();
        }
        return out;
    }
}
