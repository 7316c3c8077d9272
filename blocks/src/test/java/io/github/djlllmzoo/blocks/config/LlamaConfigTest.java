package io.github.djlllmzoo.blocks.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

class LlamaConfigTest {

    private static final Path FILE = Paths.get("config.json");

    /** The smallest valid Llama config: only the required sizes. */
    private static JsonObject minimal() {
        return JsonParser.parseString(
                        "{\"model_type\": \"llama\", \"vocab_size\": 100, \"hidden_size\": 32,"
                                + " \"intermediate_size\": 64, \"num_hidden_layers\": 2,"
                                + " \"num_attention_heads\": 4, \"max_position_embeddings\": 64}")
                .getAsJsonObject();
    }

    private static LlamaConfig parse(JsonObject json) throws InvalidCheckpointException {
        return LlamaConfig.parse(ConfigJson.of(FILE, json));
    }

    private static JsonObject with(String field, String jsonValue) {
        JsonObject json = minimal();
        json.add(field, JsonParser.parseString(jsonValue));
        return json;
    }

    @Test
    void absentFieldsTakeHuggingFaceLlamaDefaults() throws Exception {
        LlamaConfig config = parse(minimal());
        assertEquals(4, config.numKeyValueHeads());
        assertEquals(32 / 4, config.headDim());
        assertEquals(1e-6f, config.rmsNormEps());
        assertEquals(10000.0, config.ropeTheta());
        assertNull(config.ropeScaling());
        assertFalse(config.tieWordEmbeddings());
        assertFalse(config.attentionBias());
        assertFalse(config.mlpBias());
        assertEquals(0.02f, config.initializerRange());
        assertNull(config.bosTokenId());
        assertEquals(List.of(), config.eosTokenIds());
        assertEquals("model.", config.checkpointPrefix());
    }

    @Test
    void explicitHeadDimNeedNotEqualHiddenOverHeads() throws Exception {
        LlamaConfig config = parse(with("head_dim", "16"));
        assertEquals(16, config.headDim());
        assertEquals(32, config.hiddenSize());
    }

    @Test
    void eosTokenIdMayBeAList() throws Exception {
        assertEquals(
                List.of(128001, 128008, 128009),
                parse(with("eos_token_id", "[128001, 128008, 128009]")).eosTokenIds());
        assertEquals(List.of(2), parse(with("eos_token_id", "2")).eosTokenIds());
    }

    @Test
    void readsTheLlama3RopeScalingOfTheGoldenCase() throws Exception {
        DecoderConfig read =
                Configs.read(
                        Paths.get(
                                System.getProperty("llmzoo.testdata"),
                                "golden",
                                "llama3-rope-scaling"));
        LlamaConfig config = assertInstanceOf(LlamaConfig.class, read);
        assertEquals(500000.0, config.ropeTheta());
        assertEquals(RopeScaling.llama3(8, 1, 4, 32), config.ropeScaling());
        assertEquals(2, config.numKvHeads());
        assertEquals(256, config.maxPositions());
    }

    @Test
    void olderTypeKeyAndRopeParametersAreUnderstood() throws Exception {
        assertEquals(
                RopeScaling.linear(2),
                parse(with("rope_scaling", "{\"type\": \"linear\", \"factor\": 2.0}"))
                        .ropeScaling());
        assertNull(parse(with("rope_scaling", "{\"rope_type\": \"default\"}")).ropeScaling());
        LlamaConfig v5 =
                parse(
                        with(
                                "rope_parameters",
                                "{\"rope_type\": \"linear\", \"factor\": 4.0, \"rope_theta\":"
                                    + " 1000.0}"));
        assertEquals(RopeScaling.linear(4), v5.ropeScaling());
        assertEquals(1000.0, v5.ropeTheta());
    }

    @ParameterizedTest(name = "{0} = {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "num_key_value_heads | 3 | num_key_value_heads",
                "num_key_value_heads | 0 | num_key_value_heads",
                "num_attention_heads | 0 | num_attention_heads",
                "hidden_size | 34 | hidden_size",
                "hidden_size | 36 | hidden_size",
                "head_dim | 15 | head_dim",
                "hidden_act | \"gelu\" | hidden_act",
                "rms_norm_eps | 0 | rms_norm_eps",
                "rope_theta | -1 | rope_theta",
                "vocab_size | 1.5 | vocab_size",
                "max_position_embeddings | \"long\" | max_position_embeddings",
                "eos_token_id | [2, \"x\"] | eos_token_id",
                "tie_word_embeddings | 1 | tie_word_embeddings",
                "attention_dropout | 1.5 | attention_dropout",
                "rope_scaling | {\"rope_type\": \"yarn\", \"factor\": 4.0} |"
                    + " rope_scaling.rope_type",
                "rope_scaling | {\"type\": \"dynamic\", \"factor\": 2.0} | rope_scaling.type",
                "rope_scaling | {\"rope_type\": \"linear\"} | rope_scaling.factor",
                "rope_scaling | {\"rope_type\": \"linear\", \"factor\": -2} | rope_scaling.factor",
                "rope_scaling | {\"rope_type\": \"llama3\", \"factor\": 8, \"high_freq_factor\": 4,"
                    + " \"original_max_position_embeddings\": 8192} | rope_scaling.low_freq_factor",
                "rope_scaling | {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 4,"
                    + " \"high_freq_factor\": 4, \"original_max_position_embeddings\": 8192} |"
                    + " rope_scaling.high_freq_factor",
                "rope_scaling | {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 1,"
                    + " \"high_freq_factor\": 4} | rope_scaling.original_max_position_embeddings",
                "rope_scaling | \"llama3\" | rope_scaling",
            })
    void invalidValueIsRejectedNamingTheField(
            String field, String jsonValue, String expectedField) {
        InvalidCheckpointException e =
                assertThrows(InvalidCheckpointException.class, () -> parse(with(field, jsonValue)));
        assertEquals(expectedField, e.getField());
        assertTrue(
                e.getMessage().contains(FILE.toString())
                        && e.getMessage().contains("'" + expectedField + "'"),
                e.getMessage());
    }

    @Test
    void missingRequiredSizeIsRejectedNamingTheField() {
        JsonObject json = minimal();
        json.remove("intermediate_size");
        InvalidCheckpointException e =
                assertThrows(InvalidCheckpointException.class, () -> parse(json));
        assertEquals("intermediate_size", e.getField());
    }

    @Test
    void mistralWindowIsDroppedWhenNullOrAsLongAsTheContext() throws Exception {
        JsonObject noWindow = with("model_type", "\"mistral\"");
        noWindow.add("sliding_window", JsonNull.INSTANCE);
        noWindow.addProperty("num_key_value_heads", 2);
        LlamaConfig config = parse(noWindow);
        assertEquals("mistral", config.modelType());
        assertEquals(2, config.numKvHeads());
        assertEquals(0, config.slidingWindow(0));

        JsonObject windowAsLongAsContext = with("model_type", "\"mistral\"");
        windowAsLongAsContext.addProperty("sliding_window", 64);
        assertEquals(0, parse(windowAsLongAsContext).slidingWindow(0));
    }

    @Test
    void mistralWindowShorterThanTheContextAppliesToEveryLayer() throws Exception {
        JsonObject window = with("model_type", "\"mistral\"");
        window.addProperty("sliding_window", 32);
        LlamaConfig config = parse(window);
        for (int layer = 0; layer < config.numLayers(); layer++) {
            assertEquals(32, config.slidingWindow(layer));
        }

        JsonObject absentMeans4096 = with("model_type", "\"mistral\"");
        absentMeans4096.addProperty("max_position_embeddings", 32768);
        assertEquals(4096, parse(absentMeans4096).slidingWindow(0));

        JsonObject llama = minimal();
        llama.addProperty("sliding_window", 32);
        assertEquals(0, parse(llama).slidingWindow(0));
    }

    @Test
    void mistralNonPositiveWindowIsRejectedNamingTheField() {
        JsonObject window = with("model_type", "\"mistral\"");
        window.addProperty("sliding_window", 0);
        InvalidCheckpointException e =
                assertThrows(InvalidCheckpointException.class, () -> parse(window));
        assertEquals("sliding_window", e.getField());
    }

    @Test
    void configsReadDispatchesLlamaAndRejectsUnknownTypesNamingModelType(@TempDir Path dir)
            throws Exception {
        DecoderConfig gqa =
                Configs.read(
                        Paths.get(System.getProperty("llmzoo.testdata"), "golden", "llama-gqa"));
        assertInstanceOf(LlamaConfig.class, gqa);
        assertEquals(2, gqa.numKvHeads());
        InvalidCheckpointException e =
                assertThrows(
                        InvalidCheckpointException.class,
                        () -> Configs.read(write(dir, "{\"model_type\": \"falcon\"}")));
        assertEquals("model_type", e.getField());
        assertTrue(e.getMessage().contains("llama"), e.getMessage());
    }

    private static Path write(Path dir, String json) throws IOException {
        return Files.writeString(dir.resolve("config.json"), json);
    }
}
