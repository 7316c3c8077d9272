package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class GenerationConfigTest {

    private static final Gpt2Config MODEL =
            new Gpt2Config(512, 64, 32, 1, 4, 128, 1e-5f, 0f, 0f, 0f, 0, List.of(0), true);

    @Test
    void defaultsAreGreedyWithHuggingFacesSamplingValues() {
        GenerationConfig config = GenerationConfig.builder().build();
        assertTrue(config.isGreedy());
        assertEquals(GenerationConfig.DEFAULT_MAX_NEW_TOKENS, config.maxNewTokens());
        assertEquals(1f, config.temperature());
        assertEquals(50, config.topK());
        assertEquals(1f, config.topP());
        assertEquals(0f, config.minP());
        assertEquals(1f, config.repetitionPenalty());
        assertNull(config.seed());
        assertEquals(1, config.numReturnSequences());
        assertFalse(config.returnLogprobs());
    }

    @Test
    void temperatureZeroMeansGreedyEvenWhenSampling() {
        assertTrue(GenerationConfig.builder().doSample(true).temperature(0f).build().isGreedy());
        assertFalse(GenerationConfig.builder().doSample(true).temperature(0.5f).build().isGreedy());
    }

    static Stream<Arguments> invalidValues() {
        return Stream.of(
                Arguments.of("temperature", (UnaryOperator<GenerationConfig.Builder>) b -> b.temperature(-0.1f)),
                Arguments.of("temperature", (UnaryOperator<GenerationConfig.Builder>) b -> b.temperature(Float.NaN)),
                Arguments.of("top_p", (UnaryOperator<GenerationConfig.Builder>) b -> b.topP(0f)),
                Arguments.of("top_p", (UnaryOperator<GenerationConfig.Builder>) b -> b.topP(1.01f)),
                Arguments.of("top_k", (UnaryOperator<GenerationConfig.Builder>) b -> b.topK(-1)),
                Arguments.of("min_p", (UnaryOperator<GenerationConfig.Builder>) b -> b.minP(-0.01f)),
                Arguments.of("min_p", (UnaryOperator<GenerationConfig.Builder>) b -> b.minP(1.5f)),
                Arguments.of("repetition_penalty", (UnaryOperator<GenerationConfig.Builder>) b -> b.repetitionPenalty(0f)),
                Arguments.of("stop_strings", (UnaryOperator<GenerationConfig.Builder>) b -> b.stopStrings(List.of("ok", ""))),
                Arguments.of("num_return_sequences", (UnaryOperator<GenerationConfig.Builder>) b -> b.numReturnSequences(0)),
                Arguments.of("max_new_tokens", (UnaryOperator<GenerationConfig.Builder>) b -> b.maxNewTokens(0)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidValues")
    void invalidValuesAreRejectedNamingTheField(String field, UnaryOperator<GenerationConfig.Builder> change) {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> change.apply(GenerationConfig.builder()).build());
        assertTrue(e.getMessage().contains(field), e.getMessage());
    }

    @Test
    void toBuilderKeepsEveryValue() {
        GenerationConfig config =
                GenerationConfig.builder()
                        .maxNewTokens(7)
                        .doSample(true)
                        .temperature(0.3f)
                        .topK(3)
                        .topP(0.8f)
                        .minP(0.1f)
                        .repetitionPenalty(1.3f)
                        .seed(9L)
                        .stopStrings(List.of("\n"))
                        .eosTokenIds(List.of(2))
                        .numReturnSequences(2)
                        .returnLogprobs(true)
                        .build();
        assertEquals(config, config.toBuilder().build());
    }

    @Test
    void checkpointDefaultsComeFromGenerationConfigJson(@TempDir Path dir) throws Exception {
        assertEquals(List.of(0), GenerationConfig.forCheckpoint(dir, MODEL).build().eosTokenIds());
        Files.writeString(
                dir.resolve("generation_config.json"),
                "{\"do_sample\": true, \"temperature\": 0.6, \"top_p\": 0.9, \"top_k\": null,"
                        + " \"max_new_tokens\": 12, \"eos_token_id\": [2, 3], \"repetition_penalty\": 1.1,"
                        + " \"min_p\": 0.05, \"num_return_sequences\": 2, \"stop_strings\": \"###\","
                        + " \"max_length\": 4096, \"pad_token_id\": 0}",
                StandardCharsets.UTF_8);
        GenerationConfig config = GenerationConfig.forCheckpoint(dir, MODEL).build();
        assertTrue(config.doSample());
        assertEquals(0.6f, config.temperature());
        assertEquals(0.9f, config.topP());
        assertEquals(GenerationConfig.DEFAULT_TOP_K, config.topK(), "null keeps the default");
        assertEquals(12, config.maxNewTokens());
        assertEquals(List.of(2, 3), config.eosTokenIds());
        assertEquals(1.1f, config.repetitionPenalty());
        assertEquals(0.05f, config.minP());
        assertEquals(2, config.numReturnSequences());
        assertEquals(List.of("###"), config.stopStrings());
    }

    @Test
    void badGenerationConfigJsonNamesFileAndField(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("generation_config.json");
        Files.writeString(file, "{\"top_p\": 1.5}", StandardCharsets.UTF_8);
        InvalidCheckpointException range =
                assertThrows(InvalidCheckpointException.class, () -> GenerationConfig.forCheckpoint(dir, MODEL));
        assertTrue(range.getMessage().contains("generation_config.json"), range.getMessage());
        assertTrue(range.getMessage().contains("top_p"), range.getMessage());
        Files.writeString(file, "{\"temperature\": \"hot\"}", StandardCharsets.UTF_8);
        InvalidCheckpointException type =
                assertThrows(InvalidCheckpointException.class, () -> GenerationConfig.forCheckpoint(dir, MODEL));
        assertEquals("temperature", type.getField());
    }
}
