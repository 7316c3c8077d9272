package io.github.djlllmzoo.blocks;

import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.blocks.config.LlamaConfig;

/** Configs of tiny models (width 8, 2 heads, 20 tokens) for tests that count arrays or calls, not values. */
final class TinyConfigs {

    private TinyConfigs() {}

    /**
     * @param layers the decoder layers
     * @return a Llama with grouped-query attention (2 query heads, 1 key/value head) and a gated MLP of 12
     */
    static LlamaConfig llama(int layers) throws Exception {
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

    /**
     * @param layers the decoder layers
     * @return a GPT-2 with 2 heads
     */
    static Gpt2Config gpt2(int layers) throws Exception {
        JsonObject json = new JsonObject();
        json.addProperty("model_type", "gpt2");
        json.addProperty("n_layer", layers);
        json.addProperty("n_positions", 16);
        json.addProperty("vocab_size", 20);
        json.addProperty("n_embd", 8);
        json.addProperty("n_head", 2);
        return Gpt2Config.parse(ConfigJson.of(null, json));
    }
}
