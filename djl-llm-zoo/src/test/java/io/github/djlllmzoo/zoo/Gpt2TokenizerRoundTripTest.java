package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import io.github.djlllmzoo.blocks.Gpt2Model;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.translators.GeneratedSequence;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.TextTokenizer;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The real GPT-2 tokenizer (from ../shared/fixtures) with a 50257-token model. */
class Gpt2TokenizerRoundTripTest {

    private static final Path TOKENIZER =
            Paths.get(System.getProperty("llmzoo.fixtures", "../../shared/fixtures"), "gpt2-tokenizer");

    @TempDir static Path tmp;
    static Path checkpoint;

    @BeforeAll
    static void writeRandomGpt2WithTheRealVocabulary() throws Exception {
        assumeTrue(Files.isDirectory(TOKENIZER), "../shared/fixtures/gpt2-tokenizer is absent");
        checkpoint = Files.createDirectory(tmp.resolve("gpt2-50257"));
        Files.writeString(
                checkpoint.resolve("config.json"),
                "{\"model_type\": \"gpt2\", \"vocab_size\": 50257, \"n_positions\": 64, \"n_embd\": 16,"
                        + " \"n_layer\": 1, \"n_head\": 2, \"bos_token_id\": 50256, \"eos_token_id\": 50256}");
        Gpt2Config config = Gpt2Config.read(checkpoint.resolve("config.json"));
        Engine.getEngine("PyTorch").setRandomSeed(11);
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            Gpt2Model model = new Gpt2Model(config);
            model.initialize(manager, DataType.FLOAT32, new Shape(1, 1));
            Map<String, NDArray> tensors = new LinkedHashMap<>();
            for (Map.Entry<String, Parameter> e : model.namedParameters().entrySet()) {
                tensors.put("transformer." + e.getKey(), e.getValue().getArray());
            }
            SafeTensorsWriter.write(checkpoint.resolve("model.safetensors"), tensors, Map.of());
        }
        for (String file : new String[] {"tokenizer.json", "vocab.json", "merges.txt"}) {
            Files.copy(TOKENIZER.resolve(file), checkpoint.resolve(file));
        }
    }

    @Test
    void knownEncodingsMatchOpenAisTokenizer() throws Exception {
        try (TextTokenizer tokenizer = TextTokenizer.load(checkpoint)) {
            assertArrayEquals(new long[] {15496, 995}, tokenizer.encode("Hello world"));
            assertArrayEquals(new long[] {4874, 2402, 257, 640}, tokenizer.encode(" Once upon a time"));
        }
    }

    @Test
    void textRoundTripsExactlyWithoutTruncation() throws Exception {
        String text = "naïve café — 日本語 🙂 \"quotes\"  double  spaces\n".repeat(200);
        try (TextTokenizer tokenizer = TextTokenizer.load(checkpoint)) {
            long[] ids = tokenizer.encode(text);
            assertTrue(ids.length > 512, "not truncated to DJL's default 512: " + ids.length);
            assertEquals(text, tokenizer.decode(ids));
        }
    }

    @Test
    void vocabJsonAndMergesTxtAloneGiveTheSameIds() throws Exception {
        Path bpeOnly = Files.createDirectory(tmp.resolve("bpe-only"));
        Files.copy(TOKENIZER.resolve("vocab.json"), bpeOnly.resolve("vocab.json"));
        Files.copy(TOKENIZER.resolve("merges.txt"), bpeOnly.resolve("merges.txt"));
        String text = "Hello world, this is GPT-2's byte-level BPE: ünïcödé too.";
        try (TextTokenizer full = TextTokenizer.load(checkpoint);
                TextTokenizer fallback = TextTokenizer.load(bpeOnly)) {
            assertArrayEquals(full.encode(text), fallback.encode(text));
            assertEquals(text, fallback.decode(fallback.encode(text)));
        }
    }

    @Test
    void aTokenizerLargerThanTheModelVocabularyIsRejectedNamingTheFile() throws Exception {
        Path small = Files.createDirectory(tmp.resolve("too-small-vocab"));
        Files.copy(Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "gpt2-tiny", "config.json"),
                small.resolve("config.json"));
        Files.copy(Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "gpt2-tiny", "model.safetensors"),
                small.resolve("model.safetensors"));
        Files.copy(TOKENIZER.resolve("tokenizer.json"), small.resolve("tokenizer.json"));
        io.github.djlllmzoo.blocks.InvalidCheckpointException e =
                org.junit.jupiter.api.Assertions.assertThrows(
                        io.github.djlllmzoo.blocks.InvalidCheckpointException.class, () -> LocalModel.load(small));
        assertTrue(e.getMessage().contains("tokenizer.json") && e.getMessage().contains("50257")
                && e.getMessage().contains("512"), e.getMessage());
    }

    @Test
    void theTokenizerReportsItsVocabularySize() throws Exception {
        try (TextTokenizer tokenizer = TextTokenizer.load(checkpoint)) {
            assertEquals(50257, tokenizer.vocabularySize());
        }
    }

    @Test
    void aPromptGoesThroughTheModelAndItsContinuationDecodes() throws Exception {
        try (LocalModel model = LocalModel.load(checkpoint)) {
            long[] prompt = model.tokenizer().encode("Hello world");
            GeneratedSequence out =
                    model.generator()
                            .generateGreedy(prompt, GenerationConfig.builder().maxNewTokens(5).eosTokenIds(List.of()).build());
            assertEquals(5, out.tokenIds().length);
            for (long id : out.tokenIds()) {
                assertTrue(id >= 0 && id < 50257);
            }
            String text = model.tokenizer().decode(out.tokenIds());
            assertArrayEquals(out.tokenIds(), model.tokenizer().encode(text), "decoded text re-encodes to the same ids: " + text);
        }
    }
}
