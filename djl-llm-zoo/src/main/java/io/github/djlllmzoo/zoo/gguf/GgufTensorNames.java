package io.github.djlllmzoo.zoo.gguf;

import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import io.github.djlllmzoo.blocks.config.LlamaFamily;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The GGUF name of each of our parameters (llama.cpp's {@code gguf-py} tensor names:
 * {@code token_embd}, {@code blk.N.attn_q}, ...), and what llama.cpp's converter did to the values
 * that loading must undo.
 */
final class GgufTensorNames {

    private static final Pattern LAYER = Pattern.compile("(?:layers|h)\\.(\\d+)\\.(.+)");

    /** Our layer-relative names (both layouts) and llama.cpp's. */
    private static final Map<String, String> LAYER_NAMES = Map.ofEntries(
            Map.entry("input_layernorm", "attn_norm"),
            Map.entry("self_attn.q_proj", "attn_q"),
            Map.entry("self_attn.k_proj", "attn_k"),
            Map.entry("self_attn.v_proj", "attn_v"),
            Map.entry("self_attn.o_proj", "attn_output"),
            Map.entry("self_attn.qkv_proj", "attn_qkv"),
            Map.entry("self_attn.q_norm", "attn_q_norm"),
            Map.entry("self_attn.k_norm", "attn_k_norm"),
            Map.entry("pre_feedforward_layernorm", "ffn_norm"),
            Map.entry("post_feedforward_layernorm", "post_ffw_norm"),
            Map.entry("mlp.gate_proj", "ffn_gate"),
            Map.entry("mlp.up_proj", "ffn_up"),
            Map.entry("mlp.down_proj", "ffn_down"),
            // Phi-3's fused gate and up rows (gate first) are llama.cpp's ffn_up
            Map.entry("mlp.gate_up_proj", "ffn_up"),
            Map.entry("ln_1", "attn_norm"),
            Map.entry("attn.c_attn", "attn_qkv"),
            Map.entry("attn.c_proj", "attn_output"),
            Map.entry("ln_2", "ffn_norm"),
            Map.entry("mlp.c_fc", "ffn_up"),
            Map.entry("mlp.c_proj", "ffn_down"));

    private static final Map<String, String> MODEL_NAMES = Map.of(
            "embed_tokens", "token_embd",
            "wte", "token_embd",
            "wpe", "position_embd",
            "norm", "output_norm",
            "ln_f", "output_norm",
            "lm_head", "output");

    private GgufTensorNames() {}

    /**
     * The GGUF name of one of our parameters.
     *
     * @param config the model's config
     * @param name the parameter's name in the block, e.g. {@code layers.0.self_attn.q_proj.weight}
     * @return its name in a GGUF file, e.g. {@code blk.0.attn_q.weight}, or {@code null} when
     *     llama.cpp has no such tensor
     */
    static String of(DecoderConfig config, String name) {
        int dot = name.lastIndexOf('.');
        String module = name.substring(0, dot);
        String suffix = name.substring(dot);
        Matcher layer = LAYER.matcher(module);
        if (layer.matches()) {
            String inner = layer.group(2);
            String gguf = inner.equals("post_attention_layernorm")
                    ? (hasPostAttentionNorm(config) ? "post_attention_norm" : "ffn_norm")
                    : LAYER_NAMES.get(inner);
            return gguf == null ? null : "blk." + layer.group(1) + "." + gguf + suffix;
        }
        String gguf = MODEL_NAMES.get(module);
        return gguf == null ? null : gguf + suffix;
    }

    /** Gemma 2 and 3 norm each sublayer's output ({@code post_attention_layernorm}); the others norm the MLP's input. */
    private static boolean hasPostAttentionNorm(DecoderConfig config) {
        return config instanceof LlamaConfig llama
                && (llama.family() == LlamaFamily.GEMMA2 || llama.family() == LlamaFamily.GEMMA3);
    }

    /**
     * Whether llama.cpp's converter added one to this tensor: Gemma's {@code x * (1 + w)} norm
     * weights are stored as {@code 1 + w}, so that ggml multiplies by them directly.
     *
     * @param config the model's config
     * @param name our parameter name
     * @return whether to subtract one on loading
     */
    static boolean storedPlusOne(DecoderConfig config, String name) {
        return config instanceof LlamaConfig llama && llama.family().isGemma() && name.endsWith("norm.weight");
    }

    /**
     * The heads whose rows llama.cpp's converter interleaved: it permutes Llama's (and Mistral's)
     * q and k projections from Hugging Face's rotate-half order to ggml's adjacent pairs (its {@code
     * LlamaModel.permute}); the other families use ggml's rotate-half (NeoX) RoPE and are stored
     * as they are.
     *
     * @param config the model's config
     * @param name our parameter name
     * @return the number of heads of the tensor's rows to un-permute, or 0 for none
     */
    static int permutedHeads(DecoderConfig config, String name) {
        if (!(config instanceof LlamaConfig llama)
                || (llama.family() != LlamaFamily.LLAMA && llama.family() != LlamaFamily.MISTRAL)) {
            return 0;
        }
        if (name.contains("self_attn.q_proj.")) {
            return llama.numAttentionHeads();
        }
        if (name.contains("self_attn.k_proj.")) {
            return llama.numKeyValueHeads();
        }
        return 0;
    }

    /**
     * The stored row of our row {@code row} of a tensor whose rows llama.cpp interleaved per head:
     * within a head of {@code d} rows, our row {@code j * d/2 + i} (j the half, i the pair) is
     * stored as row {@code 2i + j}.
     *
     * @param row our row
     * @param rows the tensor's rows
     * @param heads its heads
     * @return the stored row
     */
    static int storedRow(int row, int rows, int heads) {
        int d = rows / heads;
        int head = row / d;
        int within = row % d;
        int half = d / 2;
        return head * d + 2 * (within % half) + within / half;
    }
}
