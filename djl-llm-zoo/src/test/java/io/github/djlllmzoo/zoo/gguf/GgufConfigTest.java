package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.gson.JsonObject;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** What a GGUF file leaves out of a model's config follows llama.cpp's rules for its architecture. */
class GgufConfigTest {

    /** Gemma 3 27B's shape: 5376 wide, 32 heads of 128 (Hugging Face's query_pre_attn_scalar: 168). */
    private static final int HIDDEN = 5376;
    private static final int HEADS = 32;
    private static final int HEAD_DIM = 128;

    @TempDir Path tmp;

    @ParameterizedTest
    @CsvSource({"gemma3, 62, 168", "gemma3, 46, 128", "gemma3, 34, 128", "gemma2, 46, 168", "gemma2, 42, 128"})
    void gemmaScoresScaleByHiddenOverHeadsOnlyInTheLayerCountOf27B(String arch, int layers, double scalar)
            throws Exception {
        Path file = tmp.resolve(arch + "-" + layers + ".gguf");
        new GgufWriter()
                .put("general.architecture", arch)
                .put(arch + ".context_length", new GgufWriter.U32(128))
                .put(arch + ".embedding_length", new GgufWriter.U32(HIDDEN))
                .put(arch + ".feed_forward_length", new GgufWriter.U32(4 * HIDDEN))
                .put(arch + ".block_count", new GgufWriter.U32(layers))
                .put(arch + ".attention.head_count", new GgufWriter.U32(HEADS))
                .put(arch + ".attention.head_count_kv", new GgufWriter.U32(HEADS / 2))
                .put(arch + ".attention.key_length", new GgufWriter.U32(HEAD_DIM))
                .put(arch + ".attention.value_length", new GgufWriter.U32(HEAD_DIM))
                .put(arch + ".attention.sliding_window", new GgufWriter.U32(1024))
                .tensor("token_embd.weight", new long[] {2, HIDDEN}, GgufType.F16, new float[2 * HIDDEN])
                .write(file);
        try (GgufFile gguf = GgufFile.open(file)) {
            JsonObject config = GgufConfig.of(gguf);
            assertEquals(scalar, config.get("query_pre_attn_scalar").getAsDouble(), arch + " of " + layers + " layers");
        }
    }
}
