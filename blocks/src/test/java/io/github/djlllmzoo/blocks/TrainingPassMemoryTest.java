package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import org.junit.jupiter.api.Test;

class TrainingPassMemoryTest {

    @Test
    void aTrainingPassHoldsNoIntermediateArrayOfItsLayersOnceTheyReturn() throws Exception {
        int[] held = new int[2];
        int[] layers = {2, 5};
        for (int i = 0; i < layers.length; i++) {
            try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
                CausalLmBlock model = DecoderModels.create(config(layers[i]));
                LlamaModelTest.setRandomWeights(model, manager);
                model.namedParameters().get("layers.0.self_attn.q_proj.weight").getArray().setRequiresGradient(true);
                try (NDManager pass = manager.newSubManager();
                        GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
                    NDArray ids = pass.create(new long[] {3, 1, 4, 1, 5, 9}, new Shape(2, 3));
                    NDArray logits = model.forward(null, ids, null, null, null, false, true);
                    held[i] = pass.getManagedArrays().size();
                    collector.backward(logits.sum());
                }
                assertEquals(false, model.namedParameters().get("layers.0.self_attn.q_proj.weight")
                        .getArray().getGradient().eq(0).all().getBoolean(), "the gradient still reaches the first layer");
            }
        }
        // each layer leaves its output (the next one's input) and a view of the pass's mask, no more
        int perLayer = (held[1] - held[0]) / (layers[1] - layers[0]);
        assertTrue(perLayer <= 2, "arrays the pass's manager holds per layer: " + perLayer + " (" + held[0]
                + " with " + layers[0] + " layers, " + held[1] + " with " + layers[1] + ")");
    }

    private static LlamaConfig config(int layers) throws Exception {
        JsonObject json = new JsonObject();
        json.addProperty("model_type", "llama");
        json.addProperty("num_hidden_layers", layers);
        json.addProperty("max_position_embeddings", 16);
        json.addProperty("vocab_size", 20);
        json.addProperty("hidden_size", 8);
        json.addProperty("intermediate_size", 12);
        json.addProperty("num_attention_heads", 2);
        json.addProperty("num_key_value_heads", 1);
        return LlamaConfig.parse(ConfigJson.of(null, json));
    }
}
