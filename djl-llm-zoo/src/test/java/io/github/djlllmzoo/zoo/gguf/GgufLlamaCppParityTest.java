package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.TextTokenizer;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * GGUF files written by llama.cpp's own converter (the kit's {@code make_gguf.py}) from a checkpoint
 * with a real tokenizer (GPT-2's byte-level BPE, Llama 2's SentencePiece): our prompt ids equal
 * {@code llama-tokenize}'s on a multilingual text with emoji, the file scores as the checkpoint it
 * came from, and our greedy ids equal {@code greedy_ids}' (F32 weights, F32 KV cache) up to the
 * first step whose top-2 margin float32 rounding could flip. Skipped where the peer is not built.
 */
class GgufLlamaCppParityTest {

    static final String TEXT = "Hello world! Grüße aus Köln, naïve café. Привет, мир! 你好，世界。 こんにちは 🌍🚀🙂\n"
            + "  two  spaces\tand a tab; numbers 1234567 and 3.14159, it's they'll we've";

    /** Logits of float32 models: a margin under this is where summation order could flip the argmax. */
    private static final double DECIDED_MARGIN = 1e-3;

    /** Same weights, same float32 operations, two loaders. */
    private static final double SAME_MODEL_TOLERANCE = 1e-4;

    @TempDir Path tmp;

    @ParameterizedTest
    @CsvSource({"gpt2-tiny, gpt2-tokenizer, 50257", "llama-gqa, llama2-tokenizer, 32000",
        "llama-mqa-tied-bf16, llama2-tokenizer, 32000"})
    void idsAndGreedyContinuationAreLlamaCpps(String golden, String tokenizer, int vocab) throws Exception {
        LlamaCppPeer peer = LlamaCppPeer.require();
        Path goldenDir = Path.of(System.getProperty("llmzoo.testdata"), "golden", golden);
        Path dir;
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            dir = LlamaCppPeer.checkpoint(goldenDir, LlamaCppPeer.fixtures().resolve(tokenizer), vocab,
                    tmp.resolve("model"), manager);
        }
        Path gguf = peer.convert(dir, tmp.resolve("model-f32.gguf"));
        long[] theirs = peer.tokenize(gguf, TEXT, tmp);
        try (LocalModel model = LocalModel.load(gguf); LocalModel checkpoint = LocalModel.load(dir)) {
            TextTokenizer ours = model.tokenizer();
            long[] ids = ours.encode(TEXT);
            assertArrayEquals(theirs, ids, golden + ": ids of llama-tokenize vs ours");
            assertTrue(ours.decode(ids).contains("🌍🚀🙂"), ours.decode(ids));

            long[] prompt = Arrays.copyOf(ids, 24);
            float[] fromGguf = model.generator().scoreTokens(prompt);
            float[] fromCheckpoint = checkpoint.generator().scoreTokens(prompt);
            double difference = 0;
            for (int i = 0; i < fromGguf.length; i++) {
                difference = Math.max(difference, Math.abs(fromGguf[i] - fromCheckpoint[i]));
            }
            assertTrue(difference <= SAME_MODEL_TOLERANCE, golden + ": " + difference);

            long[] expected = peer.greedy(gguf, prompt, 20, DECIDED_MARGIN);
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(expected.length).eosTokenIds(List.of()).build();
            long[] greedy = model.generator().generateGreedy(prompt, config).tokenIds();
            System.out.printf(Locale.ROOT, "gguf parity %s: %d prompt ids (llama-tokenize: %s...), %d greedy ids equal llama.cpp's%n",
                    golden, ids.length, Arrays.toString(Arrays.copyOf(theirs, 10)), expected.length);
            assertTrue(expected.length > 0, golden + ": llama.cpp's first step is undecided");
            assertArrayEquals(expected, greedy, golden + ": greedy ids");
        }
    }
}
