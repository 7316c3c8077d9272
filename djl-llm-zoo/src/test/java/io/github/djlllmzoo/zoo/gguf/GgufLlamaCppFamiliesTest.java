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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The golden checkpoints of the families llama.cpp implements, written as F32 GGUF files: llama.cpp's
 * greedy ids ({@code greedy_ids --kv f32}) equal ours from the same file, up to the first step whose
 * top-2 margin float32 rounding could flip, and its log-probabilities of the prompt ({@code
 * score_ids}) ours. Skipped where the peer is not built, or predates the architecture (the kit's
 * c392e50 predates Qwen3 and Gemma 3: {@code scripts/llamacpp-newer.sh} builds a newer one). The
 * golden Gemma 2, Gemma 3 and Mistral cases set what llama.cpp cannot express, so they are run as it
 * can ({@link LlamaCppPeer#gemma2AsLlamaCppRunsIt}, {@link LlamaCppPeer#gemma3AsLlamaCppRunsIt},
 * {@link LlamaCppPeer#mistralInsideItsWindow}), and llama.cpp's running Mistral's window as full
 * attention is shown on the golden window.
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
     * 2^-11 of itself; four times that through {@link #GELU_TOLERANCE_LAYERS} layers, growing with
     * the square root of the depth beyond (each layer's roundings independent of the others'). With
     * that lookup compiled out, llama.cpp's Gemma logprobs are within 5.2e-6 of ours (docs/gguf.md).
     */
    private static final double GELU_TOLERANCE = 4 * 0x1p-11;

    /** The depth {@link #GELU_TOLERANCE} is of: the golden Gemma's two layers. */
    private static final int GELU_TOLERANCE_LAYERS = 2;

    @TempDir Path tmp;

    @ParameterizedTest
    @ValueSource(strings = {
        "llama-gqa", "llama-mqa-tied-bf16", "llama3-rope-scaling", "qwen2-bias", "qwen2-tied-bf16", "phi3-fused", "gemma-bf16",
        "qwen3-qknorm", "gemma3-local-global", "gemma2-softcap-window", "mistral-sliding-window"
    })
    void greedyIdsAndLogprobsAreLlamaCpps(String name) throws Exception {
        Path golden = Path.of(System.getProperty("llmzoo.testdata"), "golden", name);
        JsonObject answers =
                JsonParser.parseString(Files.readString(golden.resolve("golden.json"), StandardCharsets.UTF_8))
                        .getAsJsonObject();
        String modelType = JsonParser.parseString(Files.readString(golden.resolve("config.json"))).getAsJsonObject()
                .get("model_type").getAsString();
        String architecture = architecture(modelType);
        LlamaCppPeer peer = LlamaCppPeer.require(architecture);
        long[] prompt = ids(answers.getAsJsonArray("prompt_ids"));
        int steps = answers.getAsJsonArray("greedy_ids").size();
        Path original = golden;
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            golden = switch (modelType) {
                case "gemma2" -> LlamaCppPeer.gemma2AsLlamaCppRunsIt(golden, tmp.resolve("gemma2"), manager);
                case "gemma3_text" -> LlamaCppPeer.gemma3AsLlamaCppRunsIt(golden, tmp.resolve("gemma3"), manager);
                case "mistral" -> LlamaCppPeer.mistralInsideItsWindow(golden, prompt.length + steps,
                        tmp.resolve("mistral"), manager);
                default -> golden;
            };
        }
        // the golden answers are of the golden config, which the cases run as llama.cpp can change
        float[] reference = golden.equals(original) ? floats(answers.getAsJsonArray("prompt_logprobs")) : null;
        JsonObject run = JsonParser.parseString(Files.readString(golden.resolve("config.json"))).getAsJsonObject();
        String activation = (run.has("hidden_activation") ? run.get("hidden_activation")
                : run.get("hidden_act")).getAsString();
        double tolerance = activation.startsWith("gelu")
                ? GELU_TOLERANCE * Math.sqrt(Math.max(1.0,
                        run.get("num_hidden_layers").getAsDouble() / GELU_TOLERANCE_LAYERS))
                : SAME_MODEL_TOLERANCE;
        Path file = tmp.resolve(name + ".gguf");
        GoldenGguf.write(golden, file, GgufType.F32, true);
        long[] expected = peer.greedy(file, prompt, steps, DECIDED_MARGIN);
        float[] theirs = peer.score(file, prompt);
        try (LocalModel model = LocalModel.load(file)) {
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(expected.length).eosTokenIds(List.of()).build();
            long[] ours = model.generator().generateGreedy(prompt, config).tokenIds();
            float[] logprobs = model.generator().scoreTokens(prompt);
            double difference = GgufGoldenCasesTest.maxDifference(logprobs, theirs);
            System.out.printf(Locale.ROOT,
                    "gguf family parity %s (llama.cpp %s): %d greedy ids equal llama.cpp's, logprobs within %.2g"
                            + " (tolerance %.2g)%s%n",
                    name, peer.commit(), expected.length, difference, tolerance, reference == null ? ""
                            : String.format(Locale.ROOT, " (from Hugging Face's float64: ours %.2g, llama.cpp's %.2g)",
                                    GgufGoldenCasesTest.maxDifference(logprobs, reference),
                                    GgufGoldenCasesTest.maxDifference(theirs, reference)));
            assertTrue(expected.length > 0, name + ": llama.cpp's first step is undecided");
            assertArrayEquals(expected, ours, name);
            assertTrue(difference <= tolerance, name + ": log-probabilities differ by " + difference);
        }
    }

    /**
     * llama.cpp runs the golden Mistral, whose 24 prompt positions cross its sliding window of 8, as
     * Llama with full attention (its {@code llama} architecture has no window): its log-probabilities
     * of the prompt from the file with the window are ours with a window holding the whole prompt,
     * and not ours with the file's window.
     */
    @Test
    void llamaCppRunsMistralsSlidingWindowAsFullAttention() throws Exception {
        LlamaCppPeer peer = LlamaCppPeer.require("llama");
        Path golden = Path.of(System.getProperty("llmzoo.testdata"), "golden", "mistral-sliding-window");
        long[] prompt = ids(JsonParser.parseString(Files.readString(golden.resolve("golden.json"), StandardCharsets.UTF_8))
                .getAsJsonObject().getAsJsonArray("prompt_ids"));
        int window = JsonParser.parseString(Files.readString(golden.resolve("config.json"))).getAsJsonObject()
                .get("sliding_window").getAsInt();
        assertTrue(prompt.length > window, "the golden prompt crosses the window");
        Path windowed = tmp.resolve("windowed.gguf");
        GoldenGguf.write(golden, windowed, GgufType.F32, true);
        Path whole = tmp.resolve("whole.gguf");
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            GoldenGguf.write(LlamaCppPeer.mistralInsideItsWindow(golden, prompt.length, tmp.resolve("whole"), manager),
                    whole, GgufType.F32, true);
        }
        float[] theirs = peer.score(windowed, prompt);
        double toFullAttention;
        double toWindow;
        try (LocalModel withWindow = LocalModel.load(windowed); LocalModel full = LocalModel.load(whole)) {
            toWindow = GgufGoldenCasesTest.maxDifference(withWindow.generator().scoreTokens(prompt), theirs);
            toFullAttention = GgufGoldenCasesTest.maxDifference(full.generator().scoreTokens(prompt), theirs);
        }
        System.out.printf(Locale.ROOT, "llama.cpp %s on the golden Mistral (window %d, %d prompt positions): "
                        + "logprobs within %.2g of ours with full attention, %.2g of ours with the window%n",
                peer.commit(), window, prompt.length, toFullAttention, toWindow);
        assertTrue(toFullAttention <= SAME_MODEL_TOLERANCE, "full attention: " + toFullAttention);
        assertTrue(toWindow > SAME_MODEL_TOLERANCE, "the window changes nothing here: " + toWindow);
    }

    /** The name llama.cpp's {@code src/llama-arch.cpp} gives a Hugging Face model type (Mistral is Llama). */
    private static String architecture(String modelType) {
        return switch (modelType) {
            case "gemma3_text" -> "gemma3";
            case "mistral" -> "llama";
            default -> modelType;
        };
    }

    private static long[] ids(JsonArray values) {
        long[] ids = new long[values.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = values.get(i).getAsLong();
        }
        return ids;
    }

    private static float[] floats(JsonArray values) {
        float[] out = new float[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = values.get(i).getAsFloat();
        }
        return out;
    }
}
