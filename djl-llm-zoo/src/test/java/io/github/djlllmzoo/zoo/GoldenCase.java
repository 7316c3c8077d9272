package io.github.djlllmzoo.zoo;

import com.google.gson.JsonArray;
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
