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
import java.util.List;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * The Qwen2, Qwen3, Phi-3 and Gemma configs: what each family means for the Llama layout (biases,
 * q/k norms, fused projections, which layers slide, Gemma's switches), read from the golden
 * checkpoints' own {@code config.json}s, and each field the project does not implement refused by
 * name.
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

    @Test
    void phi3ReadsLongRopeWithHuggingFacesDefaultAttentionFactor() throws Exception {
        JsonObject json = goldenJson("phi3-fused"); // head_dim 16, max_position_embeddings 128
        json.addProperty("original_max_position_embeddings", 16);
        String shortFactor = "[1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7]";
        String longFactor = "[1, 2, 3, 4, 5, 6, 7, 8]";
        json.add("rope_scaling", JsonParser.parseString(
                "{\"type\": \"longrope\", \"short_factor\": " + shortFactor + ", \"long_factor\": " + longFactor + "}"));
        RopeScaling scaling = LlamaConfig.parse(ConfigJson.of(FILE, json)).ropeScaling();
        assertEquals(RopeScaling.Type.LONGROPE, scaling.type());
        assertEquals(List.of(1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7), scaling.shortFactor());
        assertEquals(List.of(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0), scaling.longFactor());
        assertEquals(16, scaling.originalMaxPositionEmbeddings());
        assertEquals(8.0, scaling.factor()); // 128 / 16, exact
        // Hugging Face: sqrt(1 + ln(factor) / ln(original)) = sqrt(1 + 3 ln 2 / 4 ln 2) = sqrt(1.75)
        assertEquals(Math.sqrt(1.75), scaling.attentionFactor(), 4 * Math.ulp(Math.sqrt(1.75)));
        assertEquals(scaling.longFactor(), scaling.longRopeFactors(17));
        assertEquals(scaling.shortFactor(), scaling.longRopeFactors(16));

        // an explicit attention_factor wins; original_max_position_embeddings may sit inside rope_parameters
        json.remove("rope_scaling");
        json.remove("original_max_position_embeddings");
        json.add("rope_parameters", JsonParser.parseString("{\"rope_type\": \"longrope\", \"short_factor\": "
                + shortFactor + ", \"long_factor\": " + longFactor
                + ", \"original_max_position_embeddings\": 128, \"attention_factor\": 1.25}"));
        RopeScaling explicit = LlamaConfig.parse(ConfigJson.of(FILE, json)).ropeScaling();
        assertEquals(1.25, explicit.attentionFactor());
        assertEquals(1.0, explicit.factor());

        // without any original_max_position_embeddings LongRoPE cannot pick a factor set
        json.add("rope_parameters", JsonParser.parseString("{\"rope_type\": \"longrope\", \"short_factor\": "
                + shortFactor + ", \"long_factor\": " + longFactor + "}"));
        InvalidCheckpointException e = assertThrows(
                InvalidCheckpointException.class, () -> LlamaConfig.parse(ConfigJson.of(FILE, json)));
        assertEquals("rope_parameters.original_max_position_embeddings", e.getField());
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "phi3-fused | rope_scaling | {\"type\": \"longrope\", \"long_factor\": [1.0], \"short_factor\": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]} | rope_scaling.long_factor | 8 numbers (head_dim / 2)",
                "phi3-fused | rope_scaling | {\"type\": \"longrope\", \"long_factor\": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], \"short_factor\": [1, 1, 1, 1, 1, 1, 1, 0]} | rope_scaling.short_factor | positive",
                "phi3-fused | rope_scaling | {\"type\": \"longrope\", \"long_factor\": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], \"short_factor\": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], \"attention_factor\": -1} | rope_scaling.attention_factor | positive",
                "phi3-fused | rope_scaling | {\"type\": \"linear\", \"factor\": 2.0} | rope_scaling.type | linear",
                "phi3-fused | rope_parameters | {\"rope_type\": \"longrope\", \"rope_theta\": 10000.0} | rope_parameters.short_factor | head_dim / 2",
                "phi3-fused | partial_rotary_factor | 0.5 | partial_rotary_factor | 1.0",
                "phi3-fused | resid_pdrop | 0.1 | resid_pdrop | 0",
                "phi3-fused | embd_pdrop | 0.1 | embd_pdrop | 0",
                "qwen2-bias | layer_types | [\"full_attention\", \"sliding_attention\"] | layer_types | sliding_attention",
                "qwen3-qknorm | layer_types | [\"sliding_attention\", \"full_attention\"] | layer_types | sliding_attention",
                "qwen3-qknorm | layer_types | [\"chunked_attention\", \"full_attention\"] | layer_types | chunked_attention",
                "gemma2-softcap-window | layer_types | [\"full_attention\"] | layer_types | 4 layers",
                "gemma-bf16 | hidden_activation | \"gelu\" | hidden_activation | gelu_pytorch_tanh",
                "gemma2-softcap-window | hidden_activation | \"relu\" | hidden_activation | relu",
                "gemma2-softcap-window | sliding_window | null | sliding_window | window",
                "gemma3-local-global | use_bidirectional_attention | true | use_bidirectional_attention | bidirectional",
                "gemma3-local-global | rope_parameters | {\"full_attention\": {\"rope_type\": \"default\"}} | rope_parameters | rope_local_base_freq",
                "qwen2-bias | hidden_act | \"gelu_pytorch_tanh\" | hidden_act | silu",
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
    void qwenSlidingWindowInUseWindowsTheLayersFromMaxWindowLayersOn() throws Exception {
        for (String name : new String[] {"qwen2-bias", "qwen3-qknorm"}) {
            JsonObject json = goldenJson(name);
            json.addProperty("use_sliding_window", true);
            json.addProperty("sliding_window", 32);
            json.addProperty("max_window_layers", 1);
            assertEquals(List.of(0, 32), LlamaConfig.parse(ConfigJson.of(FILE, json)).layerWindows(), name);

            // layer_types, when given, say which layers slide instead of max_window_layers
            json.add("layer_types", JsonParser.parseString("[\"sliding_attention\", \"full_attention\"]"));
            assertEquals(List.of(32, 0), LlamaConfig.parse(ConfigJson.of(FILE, json)).layerWindows(), name);
        }
    }

    @Test
    void phi3SlidingWindowAppliesToEveryLayer() throws Exception {
        JsonObject json = goldenJson("phi3-fused");
        json.addProperty("sliding_window", 64);
        assertEquals(List.of(64, 64), LlamaConfig.parse(ConfigJson.of(FILE, json)).layerWindows());
        json.addProperty("sliding_window", 2047); // Phi-3-mini-4k's, past this context of 128
        assertEquals(List.of(0, 0), LlamaConfig.parse(ConfigJson.of(FILE, json)).layerWindows());
        json.addProperty("max_position_embeddings", 4096); // Phi-3-mini-4k's context: the window applies
        assertEquals(List.of(2047, 2047), LlamaConfig.parse(ConfigJson.of(FILE, json)).layerWindows());
    }

    @Test
    void gemmaScalesScoresByItsHeadDimAndTiesItsHeadByDefault() throws Exception {
        LlamaConfig config = golden("gemma-bf16");
        assertEquals(HiddenActivation.GELU_TANH, config.hiddenActivation());
        assertEquals(32, config.headDim());
        assertEquals(new GemmaLayout(32, 0, 0, false, 0), config.gemma());
        assertEquals(List.of(0, 0), config.layerWindows());
        JsonObject untold = goldenJson("gemma-bf16");
        untold.remove("tie_word_embeddings");
        assertTrue(LlamaConfig.parse(ConfigJson.of(FILE, untold)).tieWordEmbeddings());
    }

    @Test
    void gemma2SoftCapsAndSlidesOnItsEvenLayers() throws Exception {
        LlamaConfig config = golden("gemma2-softcap-window");
        assertEquals(new GemmaLayout(32, 20, 10, true, 0), config.gemma());
        assertEquals(List.of(8, 0, 8, 0), config.layerWindows());
        assertEquals(10f, config.finalLogitSoftcapping());

        JsonObject defaults = goldenJson("gemma2-softcap-window");
        defaults.remove("attn_logit_softcapping");
        defaults.add("final_logit_softcapping", null);
        GemmaLayout gemma = LlamaConfig.parse(ConfigJson.of(FILE, defaults)).gemma();
        assertEquals(50f, gemma.attnLogitSoftcapping()); // Gemma2Config's default
        assertEquals(0f, gemma.finalLogitSoftcapping()); // null: none
    }

    @Test
    void gemma3MakesEveryPatternthLayerGlobalOrReadsLayerTypes() throws Exception {
        LlamaConfig config = golden("gemma3-local-global");
        assertEquals(List.of(8, 8, 8, 0), config.layerWindows());
        assertEquals(new GemmaLayout(24, 0, 0, true, 10000.0), config.gemma());
        assertEquals(1e6, config.ropeTheta());
        assertTrue(config.qkNorm());

        JsonObject underscored = goldenJson("gemma3-local-global");
        underscored.remove("sliding_window_pattern");
        underscored.addProperty("_sliding_window_pattern", 2);
        assertEquals(List.of(8, 0, 8, 0), LlamaConfig.parse(ConfigJson.of(FILE, underscored)).layerWindows());

        JsonObject typed = goldenJson("gemma3-local-global");
        typed.add(
                "layer_types",
                JsonParser.parseString(
                        "[\"full_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\"]"));
        assertEquals(List.of(0, 8, 0, 8), LlamaConfig.parse(ConfigJson.of(FILE, typed)).layerWindows());
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
    void multimodalGemma3IsRefusedNamingModelType(@TempDir Path dir) throws Exception {
        JsonObject json = goldenJson("gemma3-local-global");
        JsonObject multimodal = new JsonObject();
        multimodal.addProperty("model_type", "gemma3");
        multimodal.add("text_config", json);
        Path file = Files.writeString(dir.resolve("config.json"), multimodal.toString());
        InvalidCheckpointException e =
                assertThrows(InvalidCheckpointException.class, () -> Configs.read(file));
        assertEquals("model_type", e.getField());
        assertTrue(e.getMessage().contains("gemma3_text"), e.getMessage());
    }

    @Test
    void unknownModelTypeIsRefusedListingEverySupportedFamily(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("config.json"), "{\"model_type\": \"falcon\"}");
        InvalidCheckpointException e =
                assertThrows(InvalidCheckpointException.class, () -> Configs.read(file));
        assertEquals("model_type", e.getField());
        for (String family :
                new String[] {"gpt2", "llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text"}) {
            assertTrue(e.getMessage().contains(family), e.getMessage());
        }
    }
}
