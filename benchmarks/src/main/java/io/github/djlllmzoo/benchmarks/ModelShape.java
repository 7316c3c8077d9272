package io.github.djlllmzoo.benchmarks;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Named model shapes for benchmarks that need no download: the {@code config.json} of a real
 * architecture, to be filled with random weights.
 */
public enum ModelShape {

    /** GPT-2 small (124M): 12 layers, 768 wide, 12 heads, 50257 tokens, 1024 positions. */
    GPT2_SMALL("gpt2-small", false) {
        @Override
        JsonObject config() {
            JsonObject c = new JsonObject();
            c.addProperty("model_type", "gpt2");
            c.add("architectures", strings("GPT2LMHeadModel"));
            c.addProperty("vocab_size", 50257);
            c.addProperty("n_positions", 1024);
            c.addProperty("n_ctx", 1024);
            c.addProperty("n_embd", 768);
            c.addProperty("n_layer", 12);
            c.addProperty("n_head", 12);
            c.addProperty("activation_function", "gelu_new");
            c.addProperty("layer_norm_epsilon", 1e-5);
            c.addProperty("bos_token_id", 50256);
            c.addProperty("eos_token_id", 50256);
            c.addProperty("tie_word_embeddings", true);
            return c;
        }
    },

    /**
     * A 2-layer, 64-wide GPT-2 with GPT-2's vocabulary (so its tokenizer fits): seconds to write
     * and run, for smoke tests of the benchmark tooling.
     */
    GPT2_TINY("gpt2-tiny", false) {
        @Override
        JsonObject config() {
            JsonObject c = GPT2_SMALL.config();
            c.addProperty("n_positions", 256);
            c.addProperty("n_ctx", 256);
            c.addProperty("n_embd", 64);
            c.addProperty("n_layer", 2);
            c.addProperty("n_head", 4);
            return c;
        }
    },

    /**
     * A Llama of about 110M parameters without the embeddings: 12 layers, 768 hidden, 12 heads, 4
     * key/value heads, SwiGLU intermediate 2048, 32000 tokens, 2048 positions, untied head.
     */
    LLAMA_110M("llama-110m", true) {
        @Override
        JsonObject config() {
            JsonObject c = new JsonObject();
            c.addProperty("model_type", "llama");
            c.add("architectures", strings("LlamaForCausalLM"));
            c.addProperty("vocab_size", 32000);
            c.addProperty("hidden_size", 768);
            c.addProperty("intermediate_size", 2048);
            c.addProperty("num_hidden_layers", 12);
            c.addProperty("num_attention_heads", 12);
            c.addProperty("num_key_value_heads", 4);
            c.addProperty("max_position_embeddings", 2048);
            c.addProperty("hidden_act", "silu");
            c.addProperty("rms_norm_eps", 1e-5);
            c.addProperty("rope_theta", 10000.0);
            c.addProperty("bos_token_id", 1);
            c.addProperty("eos_token_id", 2);
            c.addProperty("tie_word_embeddings", false);
            return c;
        }
    },

    /**
     * TinyLlama-1.1B: 22 layers, 2048 hidden, 32 heads over 4 key/value heads (head_dim 64), SwiGLU
     * intermediate 5632, 32000 tokens, 2048 positions, untied head.
     */
    TINYLLAMA_1_1B("tinyllama-1.1b", true) {
        @Override
        JsonObject config() {
            JsonObject c = LLAMA_110M.config();
            c.addProperty("hidden_size", 2048);
            c.addProperty("intermediate_size", 5632);
            c.addProperty("num_hidden_layers", 22);
            c.addProperty("num_attention_heads", 32);
            c.addProperty("num_key_value_heads", 4);
            return c;
        }
    },

    /**
     * Qwen2.5-0.5B: 24 layers, 896 hidden, 14 heads over 2 key/value heads (head_dim 64), SwiGLU
     * intermediate 4864, biases on q/k/v, 151936 tokens, head tied to the embedding, no window.
     */
    QWEN2_0_5B("qwen2-0.5b", true) {
        @Override
        JsonObject config() {
            JsonObject c = new JsonObject();
            c.addProperty("model_type", "qwen2");
            c.add("architectures", strings("Qwen2ForCausalLM"));
            c.addProperty("vocab_size", 151936);
            c.addProperty("hidden_size", 896);
            c.addProperty("intermediate_size", 4864);
            c.addProperty("num_hidden_layers", 24);
            c.addProperty("num_attention_heads", 14);
            c.addProperty("num_key_value_heads", 2);
            c.addProperty("max_position_embeddings", 32768);
            c.addProperty("hidden_act", "silu");
            c.addProperty("rms_norm_eps", 1e-6);
            c.addProperty("rope_theta", 1000000.0);
            c.addProperty("use_sliding_window", false);
            c.addProperty("sliding_window", 32768);
            c.addProperty("max_window_layers", 24);
            c.addProperty("bos_token_id", 151643);
            c.addProperty("eos_token_id", 151643);
            c.addProperty("tie_word_embeddings", true);
            return c;
        }
    },

    /**
     * Gemma 3 270M ({@code gemma3_text}): 18 layers, 640 hidden, 4 heads over 1 key/value head of
     * 256, GELU-tanh intermediate 2048, 262144 tokens, head tied; every 6th layer global, the others
     * a 512-position window with their own rotary base, given both ways its config gives them
     * ({@code _sliding_window_pattern} and {@code layer_types}).
     */
    GEMMA3_270M("gemma3-270m", true) {
        @Override
        JsonObject config() {
            int layers = 18;
            int pattern = 6;
            JsonObject c = new JsonObject();
            c.addProperty("model_type", "gemma3_text");
            c.add("architectures", strings("Gemma3ForCausalLM"));
            c.addProperty("vocab_size", 262144);
            c.addProperty("hidden_size", 640);
            c.addProperty("intermediate_size", 2048);
            c.addProperty("num_hidden_layers", layers);
            c.addProperty("num_attention_heads", 4);
            c.addProperty("num_key_value_heads", 1);
            c.addProperty("head_dim", 256);
            c.addProperty("max_position_embeddings", 32768);
            c.addProperty("hidden_activation", "gelu_pytorch_tanh");
            c.addProperty("rms_norm_eps", 1e-6);
            c.addProperty("query_pre_attn_scalar", 256);
            c.addProperty("rope_theta", 1000000.0);
            c.addProperty("rope_local_base_freq", 10000.0);
            c.add("rope_scaling", null);
            c.addProperty("sliding_window", 512);
            c.addProperty("_sliding_window_pattern", pattern);
            JsonArray types = new JsonArray();
            for (int i = 0; i < layers; i++) {
                types.add((i + 1) % pattern == 0 ? "full_attention" : "sliding_attention");
            }
            c.add("layer_types", types);
            c.add("attn_logit_softcapping", null);
            c.add("final_logit_softcapping", null);
            c.addProperty("bos_token_id", 2);
            c.addProperty("eos_token_id", 1);
            c.addProperty("pad_token_id", 0);
            c.addProperty("tie_word_embeddings", true);
            return c;
        }
    };

    private final String label;
    private final boolean prefixedNames;

    ModelShape(String label, boolean prefixedNames) {
        this.label = label;
        this.prefixedNames = prefixedNames;
    }

    /** @return the {@code config.json} object of the shape */
    abstract JsonObject config();

    /** @return the name on the command line, e.g. "gpt2-small" */
    public String label() {
        return label;
    }

    /**
     * Whether tensor names carry the config's checkpoint prefix, as the family's published
     * checkpoints do ({@code model.} for Llama; GPT-2's hub checkpoint has none).
     *
     * @return whether to prefix
     */
    boolean prefixedNames() {
        return prefixedNames;
    }

    /**
     * @param label a name such as "gpt2-small"
     * @return the shape
     * @throws IllegalArgumentException naming the known shapes
     */
    public static ModelShape of(String label) {
        for (ModelShape shape : values()) {
            if (shape.label.equals(label.toLowerCase(Locale.ROOT))) {
                return shape;
            }
        }
        throw new IllegalArgumentException(
                "--shape must be one of "
                        + Arrays.stream(values()).map(ModelShape::label).collect(Collectors.joining(", "))
                        + ", not '"
                        + label
                        + "'");
    }

    private static JsonArray strings(String... values) {
        JsonArray array = new JsonArray();
        for (String v : values) {
            array.add(v);
        }
        return array;
    }
}
