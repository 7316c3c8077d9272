package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

class LlamaModelTest {

    private static final int VOCAB = 50;
    private static final int HIDDEN = 32;
    private static final int INTER = 48;
    private static final int HEADS = 4;
    private static final int KV_HEADS = 2;
    private static final int HEAD_DIM = 16; // not HIDDEN / HEADS

    private static LlamaConfig config(boolean tied) throws Exception {
        JsonObject json =
                JsonParser.parseString(
                                "{\"model_type\": \"llama\", \"num_hidden_layers\": 2,"
                                    + " \"max_position_embeddings\": 40, \"attention_bias\": true,"
                                    + " \"mlp_bias\": true, \"rope_theta\": 500000.0,"
                                    + " \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\":"
                                    + " 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0,"
                                    + " \"original_max_position_embeddings\": 16}}")
                        .getAsJsonObject();
        json.addProperty("vocab_size", VOCAB);
        json.addProperty("hidden_size", HIDDEN);
        json.addProperty("intermediate_size", INTER);
        json.addProperty("num_attention_heads", HEADS);
        json.addProperty("num_key_value_heads", KV_HEADS);
        json.addProperty("head_dim", HEAD_DIM);
        json.addProperty("tie_word_embeddings", tied);
        return LlamaConfig.parse(ConfigJson.of(null, json));
    }

    @ParameterizedTest(name = "tied={0}")
    @ValueSource(booleans = {false, true})
    void parameterNamesAndShapesAreTheCheckpointsWithoutTheModelPrefix(boolean tied)
            throws Exception {
        Map<String, Shape> expected = new LinkedHashMap<>();
        expected.put("embed_tokens.weight", new Shape(VOCAB, HIDDEN));
        for (int i = 0; i < 2; i++) {
            String p = "layers." + i + ".";
            expected.put(p + "input_layernorm.weight", new Shape(HIDDEN));
            expected.put(p + "self_attn.q_proj.weight", new Shape(HEADS * HEAD_DIM, HIDDEN));
            expected.put(p + "self_attn.q_proj.bias", new Shape(HEADS * HEAD_DIM));
            expected.put(p + "self_attn.k_proj.weight", new Shape(KV_HEADS * HEAD_DIM, HIDDEN));
            expected.put(p + "self_attn.k_proj.bias", new Shape(KV_HEADS * HEAD_DIM));
            expected.put(p + "self_attn.v_proj.weight", new Shape(KV_HEADS * HEAD_DIM, HIDDEN));
            expected.put(p + "self_attn.v_proj.bias", new Shape(KV_HEADS * HEAD_DIM));
            expected.put(p + "self_attn.o_proj.weight", new Shape(HIDDEN, HEADS * HEAD_DIM));
            expected.put(p + "self_attn.o_proj.bias", new Shape(HIDDEN));
            expected.put(p + "post_attention_layernorm.weight", new Shape(HIDDEN));
            expected.put(p + "mlp.gate_proj.weight", new Shape(INTER, HIDDEN));
            expected.put(p + "mlp.gate_proj.bias", new Shape(INTER));
            expected.put(p + "mlp.up_proj.weight", new Shape(INTER, HIDDEN));
            expected.put(p + "mlp.up_proj.bias", new Shape(INTER));
            expected.put(p + "mlp.down_proj.weight", new Shape(HIDDEN, INTER));
            expected.put(p + "mlp.down_proj.bias", new Shape(HIDDEN));
        }
        expected.put("norm.weight", new Shape(HIDDEN));
        if (!tied) {
            expected.put("lm_head.weight", new Shape(VOCAB, HIDDEN));
        }
        CausalLmBlock model = DecoderModels.create(config(tied));
        assertInstanceOf(LlamaModel.class, model);
        assertEquals(expected, model.declaredShapes());
    }

    @ParameterizedTest(name = "tied={0}")
    @ValueSource(booleans = {false, true})
    void cachedDecodingEqualsFullRecomputeAtEveryPosition(boolean tied) throws Exception {
        LlamaConfig config = config(tied);
        LlamaModel model = new LlamaModel(config);
        int length = 12;
        long[] ids = new long[length];
        Random random = new Random(17);
        for (int i = 0; i < length; i++) {
            ids[i] = random.nextInt(VOCAB);
        }
        try (NDManager manager = NDManager.newBaseManager()) {
            setRandomWeights(model, manager);
            NDArray full =
                    model.forward(
                            null,
                            manager.create(ids, new Shape(1, length)),
                            null,
                            null,
                            null,
                            false,
                            false);
            try (KvCache cache = model.newCache(manager, 1, 2)) { // grows twice on the way
                int prefill = 5;
                long[] head = Arrays.copyOf(ids, prefill);
                NDArray stepLogits =
                        model.forward(
                                null,
                                manager.create(head, new Shape(1, prefill)),
                                null,
                                null,
                                cache,
                                false,
                                false);
                double maxError =
                        maxAbsDiff(full.get(new NDIndex(":, :{}, :", prefill)), stepLogits);
                for (int i = prefill; i < length; i++) {
                    NDArray one =
                            model.forward(
                                    null,
                                    manager.create(new long[] {ids[i]}, new Shape(1, 1)),
                                    null,
                                    null,
                                    cache,
                                    true,
                                    false);
                    maxError =
                            Math.max(
                                    maxError,
                                    maxAbsDiff(
                                            full.get(new NDIndex(":, {}:{}, :", i, i + 1)), one));
                }
                assertEquals(length, cache.length());
                float bound = RoundingBound.ofLogits(config, length, full);
                assertTrue(maxError < bound, "max |cached - full| = " + maxError + ", bound " + bound);
            }
        }
    }

    @org.junit.jupiter.api.Test
    void gemma3LocalLayersRotateWithTheirOwnUnscaledBaseAndGlobalOnesWithRopeScaling() throws Exception {
        JsonObject json =
                JsonParser.parseString(
                                "{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 4,"
                                        + " \"vocab_size\": 50, \"hidden_size\": 32, \"intermediate_size\": 48,"
                                        + " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16,"
                                        + " \"max_position_embeddings\": 64, \"sliding_window\": 8,"
                                        + " \"sliding_window_pattern\": 2, \"rope_theta\": 1000000.0,"
                                        + " \"rope_local_base_freq\": 10000.0,"
                                        + " \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0}}")
                        .getAsJsonObject();
        LlamaModel model = new LlamaModel(LlamaConfig.parse(ConfigJson.of(null, json)));
        assertTrue(Arrays.equals(
                RotaryEmbedding.inverseFrequencies(16, 1e6, io.github.djlllmzoo.blocks.config.RopeScaling.linear(8)),
                model.rotaryEmbedding().inverseFrequencies()));
        assertTrue(Arrays.equals(
                RotaryEmbedding.inverseFrequencies(16, 1e4, null), model.localRotaryEmbedding().inverseFrequencies()));
        for (int i = 0; i < 4; i++) {
            GroupedQueryAttention attention =
                    model.layers().get(i).getChildren().values().stream()
                            .filter(GroupedQueryAttention.class::isInstance)
                            .map(GroupedQueryAttention.class::cast)
                            .findFirst()
                            .orElseThrow();
            assertTrue(
                    attention.rotaryEmbedding() == (i % 2 == 0 ? model.localRotaryEmbedding() : model.rotaryEmbedding()),
                    "layer " + i);
        }
    }

    static void setRandomWeights(CausalLmBlock model, NDManager manager) {
        for (Map.Entry<String, Parameter> e : model.namedParameters().entrySet()) {
            Shape shape = model.declaredShapes().get(e.getKey());
            NDArray value = manager.randomNormal(0, 0.3f, shape, DataType.FLOAT32);
            if (e.getKey().endsWith("norm.weight")) {
                value = value.add(1);
            }
            e.getValue().setArray(value);
        }
    }

    static double maxAbsDiff(NDArray a, NDArray b) {
        assertEquals(a.getShape(), b.getShape());
        return a.sub(b).abs().max().getFloat();
    }
}
