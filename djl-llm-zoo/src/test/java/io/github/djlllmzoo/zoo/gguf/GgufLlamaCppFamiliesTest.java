package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
 * The golden checkpoints of the families the peer's llama.cpp (build 4748) implements, written as F32
 * GGUF files: llama.cpp's greedy ids ({@code greedy_ids --kv f32}) equal ours from the same file, up
 * to the first step whose top-2 margin float32 rounding could flip. Skipped where the peer is not
 * built. (Not compared: Qwen3 and Gemma 3, which that build predates; Gemma 2's golden case, whose
 * query_pre_attn_scalar is one llama.cpp cannot express; Mistral's, whose sliding window llama.cpp's
 * llama architecture ignores.)
 */
class GgufLlamaCppFamiliesTest {

    private static final double DECIDED_MARGIN = 1e-3;

    @TempDir Path tmp;

    @ParameterizedTest
    @ValueSource(strings = {
        "llama-gqa", "llama-mqa-tied-bf16", "llama3-rope-scaling", "qwen2-bias", "qwen2-tied-bf16", "phi3-fused", "gemma-bf16"
    })
    void greedyIdsAreLlamaCpps(String name) throws Exception {
        LlamaCppPeer peer = LlamaCppPeer.require();
        Path golden = Path.of(System.getProperty("llmzoo.testdata"), "golden", name);
        JsonObject answers =
                JsonParser.parseString(Files.readString(golden.resolve("golden.json"), StandardCharsets.UTF_8))
                        .getAsJsonObject();
        JsonArray ids = answers.getAsJsonArray("prompt_ids");
        long[] prompt = new long[ids.size()];
        for (int i = 0; i < prompt.length; i++) {
            prompt[i] = ids.get(i).getAsLong();
        }
        Path file = tmp.resolve(name + ".gguf");
        GoldenGguf.write(golden, file, GgufType.F32, true);
        long[] expected = peer.greedy(file, prompt, answers.getAsJsonArray("greedy_ids").size(), DECIDED_MARGIN);
        try (LocalModel model = LocalModel.load(file)) {
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(expected.length).eosTokenIds(List.of()).build();
            long[] ours = model.generator().generateGreedy(prompt, config).tokenIds();
            System.out.printf(Locale.ROOT, "gguf family parity %s: %d greedy ids equal llama.cpp's%n", name, expected.length);
            assertTrue(expected.length > 0, name + ": llama.cpp's first step is undecided");
            assertArrayEquals(expected, ours, name);
        }
    }
}
