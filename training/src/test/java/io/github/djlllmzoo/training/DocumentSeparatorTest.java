package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The document separator comes from the checkpoint, so packing text works on any model. */
class DocumentSeparatorTest {

    private static final Path DEFAULT_MODEL =
            Paths.get(System.getProperty("llmzoo.home", ".."), "models", "default");
    private static final Path GPT2_TINY =
            Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "gpt2-tiny");

    @TempDir Path temp;

    @Test
    void theDefaultModelPacksTextWithItsOwnEndOfSequenceAndRejectsGpt2s() throws Exception {
        Path notes = Files.writeString(temp.resolve("notes.txt"), "Tom had a red ball.");
        try (LocalModel model = LocalModel.load(DEFAULT_MODEL)) {
            long separator = model.documentSeparatorId();
            assertEquals(model.config().eosTokenIds().get(0).longValue(), separator);
            int vocabulary = model.config().vocabSize();
            int[] tokens = PackedTextDataset.tokenizeFiles(model.tokenizer(), List.of(notes), separator, vocabulary);
            assertEquals(separator, tokens[tokens.length - 1]);
            TokenIdOutOfRangeException e =
                    assertThrows(
                            TokenIdOutOfRangeException.class,
                            () -> PackedTextDataset.tokenizeFiles(model.tokenizer(), List.of(notes), 50256, vocabulary));
            assertEquals(vocabulary, e.getVocabularySize());
        }
    }

    @Test
    void theSeparatorIsTheFirstEndOfSequenceIdOfTheGenerationConfigElseNone() throws Exception {
        Path dir = Files.createDirectories(temp.resolve("model"));
        Files.copy(GPT2_TINY.resolve("model.safetensors"), dir.resolve("model.safetensors"));
        String config = Files.readString(GPT2_TINY.resolve("config.json"));
        Files.writeString(dir.resolve("config.json"), config.replace("\"eos_token_id\": 0,", ""));
        try (LocalModel model = LocalModel.load(dir)) {
            assertEquals(-1, model.documentSeparatorId());
        }
        Files.writeString(dir.resolve("generation_config.json"), "{\"eos_token_id\": [5, 7]}");
        try (LocalModel model = LocalModel.load(dir)) {
            assertEquals(5, model.documentSeparatorId());
        }
    }
}
