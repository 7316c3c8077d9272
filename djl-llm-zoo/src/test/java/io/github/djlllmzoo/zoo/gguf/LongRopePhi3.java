package io.github.djlllmzoo.zoo.gguf;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A Phi-3 checkpoint with LongRoPE: the golden {@code phi3-fused} weights (head_dim 16, a context of
 * 128) with {@code rope_scaling} type {@code longrope} pre-trained on {@code original} positions (16:
 * the long factors apply, cos and sin scaled by Hugging Face's default attention factor; 128: the
 * short ones, factor 1).
 */
public final class LongRopePhi3 {

    /** Per-frequency divisors within the pre-training context (head_dim / 2 of them). */
    public static final String SHORT_FACTOR = "[1.0, 1.05, 1.1, 1.2, 1.3, 1.5, 1.8, 2.0]";

    /** Per-frequency divisors beyond it. */
    public static final String LONG_FACTOR = "[1.0, 1.5, 2.5, 4.0, 6.0, 9.0, 14.0, 20.0]";

    private LongRopePhi3() {}

    /** @return the golden checkpoint the weights come from */
    public static Path golden() {
        return Path.of(System.getProperty("llmzoo.testdata"), "golden", "phi3-fused");
    }

    /**
     * Writes the checkpoint.
     *
     * @param dir the directory to write (created)
     * @param original {@code original_max_position_embeddings}
     * @return {@code dir}
     * @throws IOException if it cannot be written
     */
    public static Path write(Path dir, int original) throws IOException {
        Files.createDirectories(dir);
        JsonObject c = JsonParser.parseString(Files.readString(golden().resolve("config.json"), StandardCharsets.UTF_8))
                .getAsJsonObject();
        c.addProperty("original_max_position_embeddings", original);
        c.add("rope_scaling", JsonParser.parseString("{\"type\": \"longrope\", \"short_factor\": " + SHORT_FACTOR
                + ", \"long_factor\": " + LONG_FACTOR + "}"));
        Files.writeString(dir.resolve("config.json"), c.toString(), StandardCharsets.UTF_8);
        Files.copy(golden().resolve("model.safetensors"), dir.resolve("model.safetensors"));
        return dir;
    }
}
