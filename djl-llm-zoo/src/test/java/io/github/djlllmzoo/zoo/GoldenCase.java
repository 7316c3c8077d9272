package io.github.djlllmzoo.zoo;

import com.google.gson.JsonArray;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

/** One golden case of {@code testdata/golden}: a checkpoint directory and its float64 answers. */
record GoldenCase(Path dir, long[] promptIds, double[] promptLogprobs, long[] greedyIds) {

    /** The absolute tolerance of log-probabilities in float32 (see the fixtures' README). */
    static final double LOGPROB_TOLERANCE = 1e-3;

    /** The golden cases of the Llama-shaped families, each with rotary GQA and a gated MLP. */
    static List<String> llamaShaped() {
        return List.of(
                "llama-gqa",
                "llama-mqa-tied-bf16",
                "llama3-rope-scaling",
                "qwen2-bias",
                "qwen2-tied-bf16",
                "qwen3-qknorm",
                "phi3-fused",
                "mistral-sliding-window",
                "gemma-bf16",
                "gemma2-softcap-window",
                "gemma3-local-global");
    }

    /**
     * The golden cases whose configs use no sliding window although their family can: {@link
     * #withWindow} gives them one.
     */
    static List<String> windowless() {
        return List.of("qwen2-bias", "qwen3-qknorm", "phi3-fused");
    }

    /**
     * A copy of a golden checkpoint (its random weights) whose config turns on a sliding window of
     * {@code window} tokens: for Qwen2/Qwen3 ({@code use_sliding_window}) on the layers from {@code
     * max_window_layers} = 1, so a full layer precedes a windowed one; for Phi-3 on every layer. The
     * golden answers do not hold for the copy, only its comparisons with itself do.
     *
     * @param name one of {@link #windowless()}
     * @param window the window, in tokens
     * @param dir an empty directory to write the copy into
     * @return the copy's directory
     */
    static Path withWindow(String name, int window, Path dir)
            throws IOException, InvalidCheckpointException {
        Path source = root().resolve(name);
        JsonObject config;
        try (Reader reader =
                Files.newBufferedReader(source.resolve("config.json"), StandardCharsets.UTF_8)) {
            config = JsonParser.parseReader(reader).getAsJsonObject();
        }
        config.addProperty("sliding_window", window);
        if (config.get("model_type").getAsString().startsWith("qwen")) {
            config.addProperty("use_sliding_window", true);
            config.addProperty("max_window_layers", 1);
        }
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("config.json"), config.toString(), StandardCharsets.UTF_8);
        Files.copy(source.resolve("model.safetensors"), dir.resolve("model.safetensors"));
        LlamaConfig parsed = LlamaConfig.read(dir.resolve("config.json"));
        if (parsed.slidingWindow(parsed.numLayers() - 1) != window) {
            throw new IllegalStateException(name + ": the copy's last layer has no window " + window);
        }
        return dir;
    }

    static Path root() {
        String dir = System.getProperty("llmzoo.testdata");
        if (dir == null) {
            throw new IllegalStateException(
                    "system property llmzoo.testdata is not set (run through Maven)");
        }
        return Paths.get(dir, "golden");
    }

    static GoldenCase load(String name) throws IOException {
        Path dir = root().resolve(name);
        try (Reader reader =
                Files.newBufferedReader(dir.resolve("golden.json"), StandardCharsets.UTF_8)) {
            JsonObject json = JsonParser.parseReader(reader).getAsJsonObject();
            return new GoldenCase(
                    dir,
                    longs(json.getAsJsonArray("prompt_ids")),
                    doubles(json.getAsJsonArray("prompt_logprobs")),
                    longs(json.getAsJsonArray("greedy_ids")));
        }
    }

    private static long[] longs(JsonArray array) {
        long[] out = new long[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).getAsLong();
        }
        return out;
    }

    private static double[] doubles(JsonArray array) {
        double[] out = new double[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).getAsDouble();
        }
        return out;
    }
}
