package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;

/**
 * The real Llama 2 (SentencePiece BPE with byte fallback) and GPT-2 (byte-level BPE) tokenizers of
 * {@code ../shared/fixtures}; skipped when the fixtures are absent.
 */
class TextTokenizerTest {

    private Path fixtures;

    @TempDir Path dir;

    @BeforeEach
    void locateFixtures() {
        String property = System.getProperty("llmzoo.fixtures");
        fixtures = property == null ? null : Paths.get(property);
        assumeTrue(
                fixtures != null && Files.isDirectory(fixtures.resolve("llama2-tokenizer")),
                "tokenizer fixtures not present at " + property);
    }

    @Test
    void llama2EncodesKnownTextsWithOneLeadingBos() throws Exception {
        try (TextTokenizer tokenizer = TextTokenizer.load(fixtures.resolve("llama2-tokenizer"))) {
            assertArrayEquals(new long[] {1, 15043, 3186}, tokenizer.encode("Hello world"));
            assertArrayEquals(
                    new long[] {1, 306, 4658, 278, 6593, 310, 2834, 338},
                    tokenizer.encode("I believe the meaning of life is"));
            assertArrayEquals(tokenizer.encode("Hello world"), tokenizer.encode("<s>Hello world"));
            assertArrayEquals(new long[] {1}, tokenizer.encode(""));
        }
    }

    @Test
    void llama2AddBosTokenFalseDropsThePostProcessorsBos() throws Exception {
        Path copy = copyLlama2(null);
        JsonObject config = tokenizerConfig("llama2-tokenizer");
        config.addProperty("add_bos_token", false);
        Files.writeString(copy.resolve(CheckpointFiles.TOKENIZER_CONFIG), config.toString());
        try (TextTokenizer tokenizer = TextTokenizer.load(copy)) {
            assertArrayEquals(new long[] {15043, 3186}, tokenizer.encode("Hello world"));
            assertArrayEquals(new long[] {1, 15043, 3186}, tokenizer.encode("<s>Hello world"));
        }
    }

    @Test
    void llama2AddBosTokenTrueAddsBosWhenThePostProcessorDoesNot() throws Exception {
        Path copy = copyLlama2("null");
        Files.writeString(
                copy.resolve(CheckpointFiles.TOKENIZER_CONFIG),
                tokenizerConfig("llama2-tokenizer").toString());
        try (TextTokenizer tokenizer = TextTokenizer.load(copy)) {
            assertArrayEquals(new long[] {1, 15043, 3186}, tokenizer.encode("Hello world"));
            assertArrayEquals(new long[] {1, 15043, 3186}, tokenizer.encode("<s>Hello world"));
        }
    }

    @Test
    void llama2DecodesContinuationWithItsLeadingSpace() throws Exception {
        try (TextTokenizer tokenizer = TextTokenizer.load(fixtures.resolve("llama2-tokenizer"))) {
            long[] prompt = tokenizer.encode("Hello");
            long[] continuation = {3186}; // "▁world"
            assertEquals("world", tokenizer.decode(continuation));
            assertEquals(" world", tokenizer.decodeContinuation(prompt, continuation));
            long[] emoji = tokenizer.encode("🤖");
            long[] bytes = Arrays.copyOfRange(emoji, 2, emoji.length); // after <s>, "▁"
            assertEquals("🤖", tokenizer.decodeContinuation(Arrays.copyOf(emoji, 2), bytes));
        }
    }

    @Test
    void gpt2EncodesKnownTextsWithoutBos() throws Exception {
        try (TextTokenizer tokenizer = TextTokenizer.load(fixtures.resolve("gpt2-tokenizer"))) {
            assertArrayEquals(new long[] {15496, 995}, tokenizer.encode("Hello world"));
            assertArrayEquals(
                    new long[] {4874, 2402, 257, 640}, tokenizer.encode(" Once upon a time"));
            assertEquals(
                    " world", tokenizer.decodeContinuation(new long[] {15496}, new long[] {995}));
        }
    }

    @Test
    void byteLevelTokenizerWithBosTemplateAddsItOnceLikeLlama3() throws Exception {
        // GPT-2's byte-level BPE with a Llama 3-style post-processor that puts a BOS first.
        JsonObject json = readJson(fixtures.resolve("gpt2-tokenizer/tokenizer.json"));
        json.add(
                "post_processor",
                JsonParser.parseString(
                        "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\":"
                            + " {\"id\": \"<|endoftext|>\", \"type_id\": 0}}, {\"Sequence\":"
                            + " {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [{\"Sequence\":"
                            + " {\"id\": \"A\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"B\","
                            + " \"type_id\": 1}}], \"special_tokens\": {\"<|endoftext|>\": {\"id\":"
                            + " \"<|endoftext|>\", \"ids\": [50256], \"tokens\":"
                            + " [\"<|endoftext|>\"]}}}"));
        Files.writeString(dir.resolve("tokenizer.json"), json.toString());
        try (TextTokenizer tokenizer = TextTokenizer.load(dir)) {
            assertArrayEquals(new long[] {50256, 15496, 995}, tokenizer.encode("Hello world"));
            assertArrayEquals(
                    new long[] {50256, 15496, 995}, tokenizer.encode("<|endoftext|>Hello world"));
        }
    }

    /**
     * Copies the Llama 2 tokenizer.json into the temp dir, optionally replacing its post-processor.
     */
    private Path copyLlama2(String postProcessor) throws Exception {
        JsonObject json = readJson(fixtures.resolve("llama2-tokenizer/tokenizer.json"));
        if (postProcessor != null) {
            json.add("post_processor", JsonParser.parseString(postProcessor));
        }
        Files.writeString(dir.resolve("tokenizer.json"), json.toString());
        return dir;
    }

    private JsonObject tokenizerConfig(String name) throws Exception {
        return readJson(fixtures.resolve(name).resolve(CheckpointFiles.TOKENIZER_CONFIG));
    }

    private static JsonObject readJson(Path file) throws Exception {
        return JsonParser.parseString(Files.readString(file)).getAsJsonObject();
    }
}
