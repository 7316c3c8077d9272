package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

class GenerationDefaultsTest {

    @TempDir Path dir;

    private GenerationDefaults read(String json) throws Exception {
        Files.writeString(dir.resolve(CheckpointFiles.GENERATION_CONFIG), json);
        return GenerationDefaults.read(dir).orElseThrow();
    }

    @Test
    void readsLlama3StyleFileWithSeveralEosIds() throws Exception {
        GenerationDefaults defaults =
                read(
                        "{\"bos_token_id\": 128000, \"eos_token_id\": [128001, 128008, 128009],"
                                + " \"do_sample\": true, \"temperature\": 0.6, \"top_p\": 0.9,"
                                + " \"transformers_version\": \"4.43.0\"}");
        assertEquals(128000, defaults.bosTokenId());
        assertEquals(List.of(128001, 128008, 128009), defaults.eosTokenIds());
        assertEquals(true, defaults.doSample());
        assertEquals(0.6, defaults.temperature());
        assertEquals(0.9, defaults.topP());
        assertNull(defaults.topK());
        assertNull(defaults.maxNewTokens());
        assertNull(defaults.repetitionPenalty());
    }

    @Test
    void eosIdsComeFromTheFileWhenItNamesAnyElseFromTheFallback() throws Exception {
        assertEquals(List.of(2), read("{\"eos_token_id\": 2}").eosTokenIdsOr(List.of(7)));
        assertEquals(List.of(7), read("{\"max_new_tokens\": 5}").eosTokenIdsOr(List.of(7)));
    }

    @Test
    void absentFileGivesNothing() throws Exception {
        assertTrue(GenerationDefaults.read(dir).isEmpty());
    }

    @ParameterizedTest(name = "{0} = {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "temperature | -0.5",
                "top_k | -1",
                "top_p | 0",
                "top_p | 1.5",
                "repetition_penalty | 0",
                "max_new_tokens | 0",
                "max_length | 0",
                "eos_token_id | [2, -1]",
                "eos_token_id | \"</s>\"",
                "bos_token_id | -3",
                "do_sample | \"yes\"",
            })
    void invalidValueIsRejectedNamingTheField(String field, String jsonValue) {
        InvalidCheckpointException e =
                assertThrows(
                        InvalidCheckpointException.class,
                        () -> read("{\"" + field + "\": " + jsonValue + "}"));
        assertEquals(field, e.getField());
        assertTrue(e.getMessage().contains(CheckpointFiles.GENERATION_CONFIG), e.getMessage());
    }

    @Test
    void everyParsedFieldReachesTheCheckpointsGenerationConfig() throws Exception {
        Files.writeString(
                dir.resolve("generation_config.json"),
                "{\"do_sample\": true, \"temperature\": 0.7, \"top_k\": 20, \"top_p\": 0.9, \"min_p\": 0.05,"
                        + " \"repetition_penalty\": 1.1, \"max_new_tokens\": 12, \"eos_token_id\": [2, 7],"
                        + " \"num_return_sequences\": 3, \"stop_strings\": [\"The end.\", \"\\n\\n\"]}");
        io.github.djlllmzoo.blocks.config.Gpt2Config model =
                new io.github.djlllmzoo.blocks.config.Gpt2Config(
                        16, 8, 8, 1, 2, 32, 1e-5f, 0f, 0f, 0f, null, List.of(0), true);
        GenerationConfig config = GenerationConfig.forCheckpoint(dir, model).build();
        assertTrue(config.doSample());
        // each JSON number is rounded to the nearest float, as the literal is (within an ulp if by way of a double)
        assertEquals(0.7f, config.temperature(), Math.ulp(0.7f));
        assertEquals(20, config.topK());
        assertEquals(0.9f, config.topP(), Math.ulp(0.9f));
        assertEquals(0.05f, config.minP(), Math.ulp(0.05f));
        assertEquals(1.1f, config.repetitionPenalty(), Math.ulp(1.1f));
        assertEquals(12, config.maxNewTokens());
        assertEquals(List.of(2, 7), config.eosTokenIds());
        assertEquals(3, config.numReturnSequences());
        assertEquals(List.of("The end.", "\n\n"), config.stopStrings());
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {"min_p|1.5", "num_return_sequences|0", "stop_strings|\"\"", "stop_strings|[1]"})
    void invalidSamplingFieldsAreNamed(String field, String value) throws Exception {
        Files.writeString(dir.resolve("generation_config.json"), "{\"" + field + "\": " + value + "}");
        InvalidCheckpointException e =
                assertThrows(InvalidCheckpointException.class, () -> GenerationDefaults.read(dir));
        assertTrue(e.getMessage().contains("generation_config.json") && e.getMessage().contains("'" + field + "'"),
                e.getMessage());
    }
}
