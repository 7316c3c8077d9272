package io.github.djlllmzoo.blocks.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * The Qwen2, Qwen3 and Phi-3 configs: what each family means for the Llama layout (biases, q/k
 * norms, fused projections), read from the golden checkpoints' own {@code config.json}s, and each
 * field the project does not implement refused by name.
 */
class LlamaFamilyConfigTest {

    private static final Path FILE = Paths.get("config.json");

    private static LlamaConfig golden(String name) throws InvalidCheckpointException {
        return (LlamaConfig)
                Configs.read(Paths.get(System.getProperty("llmzoo.testdata"), "golden", name));
    }

    private static JsonObject goldenJson(String name) throws Exception {
        Path file =
                Paths.get(System.getProperty("llmzoo.testdata"), "golden", name, "config.json");
        return JsonParser.parseString(Files.readString(file)).getAsJsonObject();
    }

    private static InvalidCheckpointException refused(String name, String field, String value)
            throws Exception {
        JsonObject json = goldenJson(name);
        json.add(field, JsonParser.parseString(value));
        return assertThrows(
                InvalidCheckpointException.class, () -> LlamaConfig.parse(ConfigJson.of(FILE, json)));
    }

    @Test
    void qwen2HasQueryKeyValueBiasesButNoOutputBias() throws Exception {
        LlamaConfig config = golden("qwen2-bias");
        assertEquals("qwen2", config.modelType());
        assertTrue(config.qkvBias());
        assertFalse(config.attentionBias());
        assertFalse(config.mlpBias());
        assertFalse(config.qkNorm());
        assertFalse(config.fusedProjections());
        assertTrue(golden("qwen2-tied-bf16").tieWordEmbeddings());
    }

    @Test
    void qwen3NormalizesQueriesAndKeysAndTakesItsExplicitHeadDim() throws Exception {
        LlamaConfig config = golden("qwen3-qknorm");
        assertTrue(config.qkNorm());
        assertEquals(32, config.headDim());
        assertEquals(64, config.hiddenSize());
        assertFalse(config.qkvBias());
        assertFalse(config.attentionBias());

        JsonObject biased = goldenJson("qwen3-qknorm");
        biased.addProperty("attention_bias", true);
        LlamaConfig withBias = LlamaConfig.parse(ConfigJson.of(FILE, biased));
        assertTrue(withBias.qkvBias() && withBias.attentionBias());
    }

    @Test
    void phi3StoresFusedProjectionsWithoutBiases() throws Exception {
        LlamaConfig config = golden("phi3-fused");
        assertTrue(config.fusedProjections());
        assertFalse(config.qkvBias() || config.attentionBias() || config.mlpBias());
        assertEquals(4, config.numKvHeads());
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "phi3-fused | rope_scaling | {\"type\": \"longrope\", \"long_factor\": [1.0], \"short_factor\": [1.0]} | rope_scaling | longrope",
                "phi3-fused | rope_scaling | {\"type\": \"linear\", \"factor\": 2.0} | rope_scaling | linear",
                "phi3-fused | rope_parameters | {\"rope_type\": \"longrope\", \"rope_theta\": 10000.0} | rope_parameters.rope_type | longrope",
                "phi3-fused | partial_rotary_factor | 0.5 | partial_rotary_factor | 1.0",
                "phi3-fused | sliding_window | 64 | sliding_window | 64",
                "phi3-fused | resid_pdrop | 0.1 | resid_pdrop | 0",
                "phi3-fused | embd_pdrop | 0.1 | embd_pdrop | 0",
                "qwen2-bias | layer_types | [\"full_attention\", \"sliding_attention\"] | layer_types | sliding_attention",
                "qwen3-qknorm | layer_types | [\"sliding_attention\", \"full_attention\"] | layer_types | sliding_attention",
            })
    void unsupportedFieldIsRefusedNamingIt(
            String golden, String field, String value, String expectedField, String mentioned)
            throws Exception {
        InvalidCheckpointException e = refused(golden, field, value);
        assertEquals(expectedField, e.getField());
        assertTrue(
                e.getMessage().contains("'" + expectedField + "'") && e.getMessage().contains(mentioned),
                e.getMessage());
    }

    @Test
    void qwenSlidingWindowInUseIsRefusedNamingUseSlidingWindow() throws Exception {
        for (String name : new String[] {"qwen2-bias", "qwen3-qknorm"}) {
            JsonObject json = goldenJson(name);
            json.addProperty("use_sliding_window", true);
            json.addProperty("sliding_window", 32);
            json.addProperty("max_window_layers", 1);
            InvalidCheckpointException e =
                    assertThrows(
                            InvalidCheckpointException.class,
                            () -> LlamaConfig.parse(ConfigJson.of(FILE, json)));
            assertEquals("use_sliding_window", e.getField());
            assertTrue(e.getMessage().contains("32"), e.getMessage());
        }
    }

    @Test
    void qwenSlidingWindowThatNoLayerUsesIsAccepted() throws Exception {
        JsonObject flagOff = goldenJson("qwen2-bias");
        flagOff.addProperty("sliding_window", 32);
        assertEquals("qwen2", LlamaConfig.parse(ConfigJson.of(FILE, flagOff)).modelType());

        // Qwen2.5's configs: the window starts after the last layer (max_window_layers >= layers).
        JsonObject noWindowedLayer = goldenJson("qwen2-bias");
        noWindowedLayer.addProperty("use_sliding_window", true);
        noWindowedLayer.addProperty("sliding_window", 32);
        noWindowedLayer.addProperty("max_window_layers", 2);
        assertEquals("qwen2", LlamaConfig.parse(ConfigJson.of(FILE, noWindowedLayer)).modelType());
    }

    @Test
    void unknownModelTypeIsRefusedListingEverySupportedFamily(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("config.json"), "{\"model_type\": \"falcon\"}");
        InvalidCheckpointException e =
                assertThrows(InvalidCheckpointException.class, () -> Configs.read(file));
        assertEquals("model_type", e.getField());
        for (String family : new String[] {"gpt2", "llama", "mistral", "qwen2", "qwen3", "phi3"}) {
            assertTrue(e.getMessage().contains(family), e.getMessage());
        }
    }
}
