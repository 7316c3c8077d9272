package io.github.djlllmzoo.zoo.gguf;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.blocks.config.LlamaFamily;
import io.github.djlllmzoo.blocks.config.RopeScaling;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A GGUF file's hyperparameters ({@code {arch}.*} metadata, as llama.cpp's converter writes them)
 * as the Hugging Face {@code config.json} of the same model, so that the family's own parser
 * ({@code blocks/config}) builds the config record and refuses what it does not support, by the
 * same rules as for a checkpoint directory. What Hugging Face's configs hold and GGUF does not
 * (Gemma 2/3's {@code query_pre_attn_scalar}, Gemma 3's local rotary base) follows llama.cpp's
 * own rules for those architectures.
 */
final class GgufConfig {

    /** The GGUF architectures loaded, in the order messages list them. */
    static final List<String> ARCHITECTURES =
            List.of("llama", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3", "gpt2");

    /** llama.cpp's rotary base of Gemma 3's sliding-window layers (not stored in GGUF). */
    private static final double GEMMA3_LOCAL_ROPE_THETA = 10_000.0;

    /** llama.cpp's Gemma 3 layer pattern when the file names none: five local layers, one global. */
    private static final int GEMMA3_DEFAULT_PATTERN = 6;

    /**
     * The layer counts of the 27B shapes (Gemma 2: 46, Gemma 3: 62), whose scores llama.cpp scales by
     * hidden / heads, not head_dim (its {@code load_hparams}: {@code LLM_TYPE_27B}), as their Hugging
     * Face configs' {@code query_pre_attn_scalar} does (Gemma 3 27B: 5376 / 32 = 168, head_dim 128).
     */
    private static final Map<String, Integer> LAYERS_OF_27B = Map.of("gemma2", 46, "gemma3", 62);

    /** The tensor of per-frequency rotary factors llama.cpp's converter writes for Llama 3.1's rope scaling. */
    static final String ROPE_FREQS = "rope_freqs.weight";

    /** LongRoPE's per-frequency divisors beyond the pre-training context (Phi-3's {@code long_factor}). */
    static final String ROPE_FACTORS_LONG = "rope_factors_long.weight";

    /** LongRoPE's per-frequency divisors within the pre-training context (Phi-3's {@code short_factor}). */
    static final String ROPE_FACTORS_SHORT = "rope_factors_short.weight";

    /** The tensors that hold rotary factors, read into the config rather than as parameters. */
    static final Set<String> ROTARY_TENSORS = Set.of(ROPE_FREQS, ROPE_FACTORS_LONG, ROPE_FACTORS_SHORT);

    /** Hugging Face's default rotary base. */
    private static final double DEFAULT_ROPE_THETA = 10_000.0;

    private GgufConfig() {}

    /**
     * The {@code config.json} of a GGUF file's model.
     *
     * @param gguf the file
     * @return the config object
     * @throws InvalidGgufException naming the architecture or key the project does not support
     */
    static JsonObject of(GgufFile gguf) throws InvalidGgufException {
        GgufMetadata m = gguf.metadata();
        Path file = gguf.path();
        String arch = m.architecture();
        if (!ARCHITECTURES.contains(arch)) {
            throw new InvalidGgufException(
                    file,
                    "general.architecture",
                    "architecture '" + arch + "' is not supported; supported: " + String.join(", ", ARCHITECTURES));
        }
        JsonObject c = new JsonObject();
        int vocab = Math.toIntExact(gguf.require("token_embd.weight").shape().get(0));
        if (m.has(arch + ".feed_forward_length") && !(m.values().get(arch + ".feed_forward_length") instanceof Long)) {
            throw new InvalidGgufException(
                    file, arch + ".feed_forward_length", "per-layer feed-forward widths are not supported");
        }
        if (arch.equals("gpt2")) {
            c.addProperty("model_type", Gpt2Config.MODEL_TYPE);
            int embd = m.requirePositiveInt("gpt2.embedding_length");
            c.addProperty("n_embd", embd);
            c.addProperty("n_layer", m.requirePositiveInt("gpt2.block_count"));
            c.addProperty("n_head", m.requirePositiveInt("gpt2.attention.head_count"));
            int ctx = m.requirePositiveInt("gpt2.context_length");
            c.addProperty("n_positions", ctx);
            c.addProperty("n_ctx", ctx);
            int ff = m.requirePositiveInt("gpt2.feed_forward_length");
            if (ff != 4 * embd) {
                c.addProperty("n_inner", ff);
            }
            c.addProperty("layer_norm_epsilon", m.optDouble("gpt2.attention.layer_norm_epsilon", 1e-5));
            c.addProperty("activation_function", "gelu_new");
            c.addProperty("vocab_size", vocab);
            c.addProperty("tie_word_embeddings", true);
            tokens(m, c);
            return c;
        }
        LlamaFamily family = family(gguf, arch);
        c.addProperty("model_type", family.modelType());
        int hidden = m.requirePositiveInt(arch + ".embedding_length");
        int heads = m.requirePositiveInt(arch + ".attention.head_count");
        int layers = m.requirePositiveInt(arch + ".block_count");
        c.addProperty("hidden_size", hidden);
        c.addProperty("num_hidden_layers", layers);
        c.addProperty("intermediate_size", m.requirePositiveInt(arch + ".feed_forward_length"));
        c.addProperty("num_attention_heads", heads);
        c.addProperty("num_key_value_heads", m.has(arch + ".attention.head_count_kv")
                ? m.requirePositiveInt(arch + ".attention.head_count_kv") : heads);
        c.addProperty("max_position_embeddings", m.requirePositiveInt(arch + ".context_length"));
        c.addProperty("rms_norm_eps", m.optDouble(arch + ".attention.layer_norm_rms_epsilon", 1e-6));
        c.addProperty("vocab_size", vocab);
        c.addProperty("tie_word_embeddings", !gguf.tensors().containsKey("output.weight"));
        if (m.has(arch + ".rope.freq_base")) {
            c.addProperty("rope_theta", m.optDouble(arch + ".rope.freq_base", 0));
        }
        int headDim = hidden / heads;
        if (m.has(arch + ".attention.key_length")) {
            headDim = m.requirePositiveInt(arch + ".attention.key_length");
            int valueLength = m.has(arch + ".attention.value_length")
                    ? m.requirePositiveInt(arch + ".attention.value_length") : headDim;
            if (valueLength != headDim) {
                throw new InvalidGgufException(file, arch + ".attention.value_length",
                        "value heads of " + valueLength + " != key heads of " + headDim + " are not supported");
            }
            c.addProperty("head_dim", headDim);
        }
        long rotary = m.optLong(arch + ".rope.dimension_count", headDim);
        if (rotary != headDim) {
            throw new InvalidGgufException(file, arch + ".rope.dimension_count",
                    "rotary embeddings over " + rotary + " of a head's " + headDim + " dimensions are not supported");
        }
        ropeScaling(m, arch, c);
        ropeFrequencies(gguf, arch, headDim, c);
        longRope(gguf, arch, headDim, c);
        if (m.has(arch + ".attention.sliding_window")) {
            c.addProperty("sliding_window", m.requirePositiveInt(arch + ".attention.sliding_window"));
        }
        switch (family) {
            case LLAMA:
                c.addProperty("attention_bias", gguf.tensors().containsKey("blk.0.attn_q.bias"));
                c.addProperty("mlp_bias", gguf.tensors().containsKey("blk.0.ffn_up.bias"));
                break;
            case QWEN3:
                c.addProperty("attention_bias", gguf.tensors().containsKey("blk.0.attn_q.bias"));
                break;
            case QWEN2:
                c.addProperty("use_sliding_window", false);
                break;
            case GEMMA:
                c.addProperty("hidden_activation", "gelu_pytorch_tanh");
                break;
            case GEMMA2:
            case GEMMA3:
                c.addProperty("hidden_activation", "gelu_pytorch_tanh");
                c.addProperty("query_pre_attn_scalar", queryPreAttnScalar(m, arch, hidden, heads, headDim, layers));
                softcap(m, arch + ".attn_logit_softcapping", "attn_logit_softcapping", c);
                softcap(m, arch + ".final_logit_softcapping", "final_logit_softcapping", c);
                if (family == LlamaFamily.GEMMA3) {
                    c.addProperty("rope_local_base_freq", GEMMA3_LOCAL_ROPE_THETA);
                    pattern(m, arch, layers, c);
                }
                break;
            default:
                break;
        }
        tokens(m, c);
        return c;
    }

    /** Llama with a sliding window is Mistral (llama.cpp writes Mistral as {@code llama}). */
    private static LlamaFamily family(GgufFile gguf, String arch) throws InvalidGgufException {
        switch (arch) {
            case "llama":
                return gguf.metadata().has("llama.attention.sliding_window") ? LlamaFamily.MISTRAL : LlamaFamily.LLAMA;
            case "gemma3":
                return LlamaFamily.GEMMA3;
            default:
                return LlamaFamily.of(arch);
        }
    }

    private static void ropeScaling(GgufMetadata m, String arch, JsonObject c) throws InvalidGgufException {
        String key = arch + ".rope.scaling.type";
        String type = m.optString(key, "none");
        double factor = m.optDouble(arch + ".rope.scaling.factor", 0);
        if (type.equals("none") || (type.equals("linear") && factor == 1.0)) {
            return;
        }
        if (!type.equals("linear")) {
            throw new InvalidGgufException(m.file(), key,
                    "rope scaling '" + type + "' is not supported; only linear is");
        }
        JsonObject scaling = new JsonObject();
        scaling.addProperty("rope_type", "linear");
        scaling.addProperty("factor", factor);
        c.add("rope_scaling", scaling);
    }

    /**
     * Llama 3.1's rope scaling, which llama.cpp's converter stores as per-frequency factors in
     * {@code rope_freqs.weight} ({@link GgufRopeFactors}).
     */
    private static void ropeFrequencies(GgufFile gguf, String arch, int headDim, JsonObject c)
            throws InvalidGgufException {
        GgufTensor tensor = gguf.tensors().get(ROPE_FREQS);
        if (tensor == null) {
            return;
        }
        if (!arch.equals("llama") || c.has("rope_scaling")) {
            throw new InvalidGgufException(gguf.path(), ROPE_FREQS,
                    "per-frequency rotary factors are supported for Llama 3.1's scaling of a llama model only");
        }
        try {
            double theta = c.has("rope_theta") ? c.get("rope_theta").getAsDouble() : DEFAULT_ROPE_THETA;
            RopeScaling scaling = GgufRopeFactors.llama3(tensor.toFloatArray(), headDim, theta);
            if (scaling != null) {
                JsonObject json = new JsonObject();
                json.addProperty("rope_type", scaling.type().jsonName());
                json.addProperty("factor", scaling.factor());
                json.addProperty("low_freq_factor", scaling.lowFreqFactor());
                json.addProperty("high_freq_factor", scaling.highFreqFactor());
                json.addProperty("original_max_position_embeddings", scaling.originalMaxPositionEmbeddings());
                c.add("rope_scaling", json);
            }
        } catch (IllegalArgumentException | java.io.IOException e) {
            throw new InvalidGgufException(gguf.path(), ROPE_FREQS, "not Llama 3.1's rope scaling: " + e.getMessage(), e);
        }
    }

    /**
     * Phi-3's LongRoPE, which llama.cpp's converter stores as the tensors {@code rope_factors_long}
     * and {@code rope_factors_short} (float32, head width / 2 each) with {@code
     * rope.scaling.original_context_length} and {@code rope.scaling.attn_factor}; as llama.cpp reads
     * the file, an absent original context is the context length and an absent attention factor 1.
     */
    private static void longRope(GgufFile gguf, String arch, int headDim, JsonObject c)
            throws InvalidGgufException {
        GgufTensor longFactors = gguf.tensors().get(ROPE_FACTORS_LONG);
        GgufTensor shortFactors = gguf.tensors().get(ROPE_FACTORS_SHORT);
        if (longFactors == null && shortFactors == null) {
            return;
        }
        String present = longFactors != null ? ROPE_FACTORS_LONG : ROPE_FACTORS_SHORT;
        if (!arch.equals("phi3") || c.has("rope_scaling")) {
            throw new InvalidGgufException(gguf.path(), present,
                    "LongRoPE's per-frequency rotary factors are supported for phi3 models only");
        }
        if (longFactors == null || shortFactors == null) {
            throw new InvalidGgufException(gguf.path(), present, "LongRoPE needs both "
                    + ROPE_FACTORS_LONG + " and " + ROPE_FACTORS_SHORT + "; the other is missing");
        }
        JsonObject json = new JsonObject();
        json.addProperty("type", "longrope");
        json.addProperty("rope_type", "longrope");
        json.add("short_factor", factors(gguf, shortFactors, headDim));
        json.add("long_factor", factors(gguf, longFactors, headDim));
        GgufMetadata m = gguf.metadata();
        int original = m.has(arch + ".rope.scaling.original_context_length")
                ? m.requirePositiveInt(arch + ".rope.scaling.original_context_length")
                : c.get("max_position_embeddings").getAsInt();
        double attention = m.optDouble(arch + ".rope.scaling.attn_factor", 1.0);
        if (!(attention > 0)) {
            throw new InvalidGgufException(gguf.path(), arch + ".rope.scaling.attn_factor", "must be positive, got "
                    + attention);
        }
        json.addProperty("original_max_position_embeddings", original);
        json.addProperty("attention_factor", attention);
        c.addProperty("original_max_position_embeddings", original);
        c.add("rope_scaling", json);
    }

    private static JsonArray factors(GgufFile gguf, GgufTensor tensor, int headDim) throws InvalidGgufException {
        if (tensor.shape().dimension() != 1 || tensor.shape().get(0) != headDim / 2) {
            throw new InvalidGgufException(gguf.path(), tensor.name(),
                    "has shape " + tensor.shape() + "; LongRoPE needs head width / 2 = " + headDim / 2 + " factors");
        }
        float[] values;
        try {
            values = tensor.toFloatArray();
        } catch (java.io.IOException e) {
            throw new InvalidGgufException(gguf.path(), tensor.name(), "cannot be read: " + e.getMessage(), e);
        }
        JsonArray array = new JsonArray();
        for (float v : values) {
            if (!(v > 0)) {
                throw new InvalidGgufException(gguf.path(), tensor.name(), "holds " + v + "; factors must be positive");
            }
            // the float32 value's shortest decimal, so config.json round-trips it exactly
            array.add(Double.parseDouble(Float.toString(v)));
        }
        return array;
    }

    /**
     * Gemma 2/3 scale scores by {@code attention.scale} when the file gives it (llama.cpp's key for a
     * score multiplier), else as llama.cpp does: by the head width, or by hidden / heads for the 27B
     * shapes.
     */
    private static double queryPreAttnScalar(
            GgufMetadata m, String arch, int hidden, int heads, int headDim, int layers)
            throws InvalidGgufException {
        double scale = m.optDouble(arch + ".attention.scale", 0);
        if (scale > 0) {
            return 1 / (scale * scale);
        }
        return Integer.valueOf(layers).equals(LAYERS_OF_27B.get(arch)) ? (double) hidden / heads : headDim;
    }

    private static void softcap(GgufMetadata m, String key, String field, JsonObject c)
            throws InvalidGgufException {
        double cap = m.optDouble(key, 0);
        if (cap > 0) {
            c.addProperty(field, cap);
        } else {
            c.add(field, com.google.gson.JsonNull.INSTANCE);
        }
    }

    /**
     * Gemma 3's local/global layers: {@code attention.sliding_window_pattern} as a period (every
     * n-th layer global) or a per-layer bool array (true: sliding), else llama.cpp's period of 6.
     */
    private static void pattern(GgufMetadata m, String arch, int layers, JsonObject c) throws InvalidGgufException {
        String key = arch + ".attention.sliding_window_pattern";
        Object value = m.values().get(key);
        if (value instanceof List) {
            List<Boolean> sliding = m.optList(key, Boolean.class);
            if (sliding.size() != layers) {
                throw new InvalidGgufException(m.file(), key, "has " + sliding.size() + " entries for " + layers + " layers");
            }
            JsonArray types = new JsonArray();
            for (boolean s : sliding) {
                types.add(s ? "sliding_attention" : "full_attention");
            }
            c.add("layer_types", types);
            return;
        }
        c.addProperty("sliding_window_pattern", value == null ? GEMMA3_DEFAULT_PATTERN : m.requirePositiveInt(key));
    }

    /** The special token ids Hugging Face's config.json carries. */
    private static void tokens(GgufMetadata m, JsonObject c) throws InvalidGgufException {
        if (m.has("tokenizer.ggml.bos_token_id")) {
            c.addProperty("bos_token_id", m.requireLong("tokenizer.ggml.bos_token_id"));
        }
        if (m.has("tokenizer.ggml.eos_token_id")) {
            c.addProperty("eos_token_id", m.requireLong("tokenizer.ggml.eos_token_id"));
        }
    }
}
