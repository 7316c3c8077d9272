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
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * GGUF files of each family with a real tokenizer (GPT-2's byte-level BPE, Llama 2's SentencePiece):
 * our prompt ids equal {@code llama-tokenize}'s on a multilingual text with emoji, the file scores as
 * the checkpoint it came from, and our greedy ids equal {@code greedy_ids}' (F32 weights, F32 KV
 * cache) up to the first step whose top-2 margin float32 rounding could flip. GPT-2, Llama and
 * Mistral files are written by llama.cpp's own converter (the kit's {@code make_gguf.py}); Qwen3's,
 * Gemma 2's and Gemma 3's, which it does not write, by {@link GoldenGguf} with that converter's
 * vocabulary and the keys {@code convert_hf_to_gguf.py} sets for those families (Qwen's {@code
 * qwen2} pre-tokenizer, Gemma 2's and 3's SentencePiece without a space prefix). Gemma 2, Gemma 3
 * and Mistral are the golden cases as llama.cpp can run them ({@link LlamaCppPeer}). Skipped where
 * the peer is not built or predates the architecture (the kit's c392e50 predates Qwen3 and Gemma 3:
 * {@code scripts/llamacpp-newer.sh}).
 */
class GgufLlamaCppParityTest {

    static final String TEXT = "Hello world! Grüße aus Köln, naïve café. Привет, мир! 你好，世界。 こんにちは 🌍🚀🙂\n"
            + "  two  spaces\tand a tab; numbers 1234567 and 3.14159, it's they'll we've";

    /** Logits of float32 models: a margin under this is where summation order could flip the argmax. */
    private static final double DECIDED_MARGIN = 1e-3;

    /** Prompt ids scored and continued: the first of the text's. */
    private static final int PROMPT = 24;

    /** Greedy ids compared. */
    private static final int GREEDY = 20;

    /** Same weights, same float32 operations, two loaders. */
    private static final double SAME_MODEL_TOLERANCE = 1e-4;

    /** The tokenizer keys convert_hf_to_gguf.py writes for the families the kit's converter does not. */
    private static final Map<String, Map<String, Object>> VOCABULARY_KEYS = Map.of(
            // Qwen2/2.5/3 share one byte-level BPE tokenizer, whose pre-tokenizer llama.cpp calls qwen2
            "qwen3", Map.of("tokenizer.ggml.pre", "qwen2"),
            // Gemma3Model.set_vocab: SentencePiece, add_add_space_prefix(False)
            "gemma3", Map.of("tokenizer.ggml.add_space_prefix", false),
            // Gemma2Model.set_vocab: the same
            "gemma2", Map.of("tokenizer.ggml.add_space_prefix", false));

    @TempDir Path tmp;

    @ParameterizedTest
    @CsvSource({"gpt2-tiny, gpt2, gpt2-tokenizer, 50257", "llama-gqa, llama, llama2-tokenizer, 32000",
        "llama-mqa-tied-bf16, llama, llama2-tokenizer, 32000", "qwen3-qknorm, qwen3, gpt2-tokenizer, 50257",
        "gemma3-local-global, gemma3, llama2-tokenizer, 32000", "gemma2-softcap-window, gemma2, llama2-tokenizer, 32000",
        "mistral-sliding-window, llama, llama2-tokenizer, 32000"})
    void idsAndGreedyContinuationAreLlamaCpps(String golden, String architecture, String tokenizer, int vocab)
            throws Exception {
        LlamaCppPeer peer = LlamaCppPeer.require(architecture);
        Path goldenDir = Path.of(System.getProperty("llmzoo.testdata"), "golden", golden);
        Path dir;
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            Path weights = switch (golden) {
                case "gemma2-softcap-window" -> LlamaCppPeer.gemma2AsLlamaCppRunsIt(goldenDir, tmp.resolve("gemma2"), manager);
                case "gemma3-local-global" -> LlamaCppPeer.gemma3AsLlamaCppRunsIt(goldenDir, tmp.resolve("gemma3"), manager);
                case "mistral-sliding-window" -> LlamaCppPeer.mistralInsideItsWindow(goldenDir, PROMPT + GREEDY,
                        tmp.resolve("mistral"), manager);
                default -> goldenDir;
            };
            dir = LlamaCppPeer.checkpoint(weights, LlamaCppPeer.fixtures().resolve(tokenizer), vocab,
                    tmp.resolve("model"), manager);
        }
        Path gguf = tmp.resolve("model-f32.gguf");
        if (VOCABULARY_KEYS.containsKey(architecture)) {
            GoldenGguf.write(dir, gguf, GgufType.F32, peer.vocabulary(dir, tmp.resolve("vocabulary.gguf")),
                    VOCABULARY_KEYS.get(architecture));
        } else {
            peer.convert(dir, gguf);
        }
        long[] theirs = peer.tokenize(gguf, TEXT, tmp);
        try (LocalModel model = LocalModel.load(gguf); LocalModel checkpoint = LocalModel.load(dir)) {
            TextTokenizer ours = model.tokenizer();
            long[] ids = ours.encode(TEXT);
            assertArrayEquals(theirs, ids, golden + ": ids of llama-tokenize vs ours");
            assertTrue(ours.decode(ids).contains("🌍🚀🙂"), ours.decode(ids));

            long[] prompt = Arrays.copyOf(ids, PROMPT);
            float[] fromGguf = model.generator().scoreTokens(prompt);
            float[] fromCheckpoint = checkpoint.generator().scoreTokens(prompt);
            double difference = 0;
            for (int i = 0; i < fromGguf.length; i++) {
                difference = Math.max(difference, Math.abs(fromGguf[i] - fromCheckpoint[i]));
            }
            assertTrue(difference <= SAME_MODEL_TOLERANCE, golden + ": " + difference);

            long[] expected = peer.greedy(gguf, prompt, GREEDY, DECIDED_MARGIN);
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(expected.length).eosTokenIds(List.of()).build();
            long[] greedy = model.generator().generateGreedy(prompt, config).tokenIds();
            System.out.printf(Locale.ROOT,
                    "gguf parity %s (llama.cpp %s): %d prompt ids (llama-tokenize: %s...), %d greedy ids equal llama.cpp's%n",
                    golden, peer.commit(), ids.length, Arrays.toString(Arrays.copyOf(theirs, 10)), expected.length);
            assertTrue(expected.length > 0, golden + ": llama.cpp's first step is undecided");
            assertArrayEquals(expected, greedy, golden + ": greedy ids");
        }
    }
}
