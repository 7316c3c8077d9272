package io.github.djlllmzoo.zoo.gguf;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import io.github.djlllmzoo.zoo.safetensors.TensorInfo;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Writes a GGUF file from a Hugging Face checkpoint directory as llama.cpp's {@code
 * convert_hf_to_gguf.py} does for each family (its tensor names, Llama's q/k rows interleaved per
 * head, Gemma's norms stored as {@code 1 + w}, GPT-2's Conv1D weights transposed to (out, in), its
 * metadata keys), so that loading the file can be checked against loading the directory.
 */
public final class GoldenGguf {

    private static final Pattern LAYER = Pattern.compile("(?:model\\.layers|h)\\.(\\d+)\\.(.+)\\.(weight|bias)");

    private GoldenGguf() {}

    /**
     * @param dir the checkpoint directory (config.json, model.safetensors)
     * @param file the GGUF file to write
     * @param type the type of the 2-D weights whose rows are whole blocks of it (others stay F32,
     *     as llama.cpp's quantizer falls back; unlike llama.cpp, GPT-2's position embeddings too, so
     *     that a quantized file holds every weight the model compresses in that type)
     */
    public static void write(Path dir, Path file, GgufType type) throws Exception {
        write(dir, file, type, false);
    }

    /**
     * As {@link #write(Path, Path, GgufType)}, with a vocabulary of the config's size if asked: a
     * SentencePiece one of control, byte and numbered pieces (the golden cases have no tokenizer;
     * llama.cpp loads no model without one), and the keys llama.cpp requires that a Hugging Face
     * config may leave null (Phi-3's sliding window: the context length, which windows nothing).
     */
    public static void write(Path dir, Path file, GgufType type, boolean vocabulary) throws Exception {
        write(dir, file, type, vocabulary, null);
    }

    /**
     * As {@link #write(Path, Path, GgufType, boolean)}, with {@code tokenizer.chat_template}.
     *
     * @param chatTemplate the Jinja template, or {@code null} for none
     */
    public static void write(Path dir, Path file, GgufType type, boolean vocabulary, String chatTemplate)
            throws Exception {
        write(dir, file, type, vocabulary ? Map.of() : null, chatTemplate);
    }

    /**
     * As {@link #write(Path, Path, GgufType)}, with the {@code tokenizer.*} metadata of a real
     * tokenizer, as llama.cpp's converter wrote it into {@code vocabulary} (a file of that metadata
     * alone: {@link LlamaCppPeer#vocabulary}), and {@code overrides} on top of it (the keys that
     * family's converter writes otherwise, e.g. Qwen's {@code tokenizer.ggml.pre}).
     *
     * @param overrides keys and values as {@link GgufWriter#put} takes them
     */
    public static void write(Path dir, Path file, GgufType type, Path vocabulary, Map<String, Object> overrides)
            throws Exception {
        Map<String, Object> keys = new LinkedHashMap<>();
        try (GgufFile source = GgufFile.open(vocabulary)) {
            for (Map.Entry<String, Object> e : source.metadata().values().entrySet()) {
                if (e.getKey().startsWith("tokenizer.")) {
                    keys.put(e.getKey(), writable(e.getKey(), e.getValue()));
                }
            }
        }
        keys.putAll(overrides);
        write(dir, file, type, keys, null);
    }

    /**
     * @param vocabulary {@code null}: none; empty: the synthetic one of the config's size; else the
     *     {@code tokenizer.*} keys to write
     */
    private static void write(Path dir, Path file, GgufType type, Map<String, Object> vocabulary, String chatTemplate)
            throws Exception {
        JsonObject c = JsonParser.parseString(Files.readString(dir.resolve("config.json"), StandardCharsets.UTF_8))
                .getAsJsonObject();
        String modelType = c.get("model_type").getAsString();
        String arch = switch (modelType) {
            case "mistral" -> "llama";
            case "gemma3_text" -> "gemma3";
            default -> modelType;
        };
        boolean gemma = arch.startsWith("gemma");
        GgufWriter w = new GgufWriter();
        w.put("general.architecture", arch);
        // not the directory name: llama.cpp gives models named like "phi3" the special tokens of Phi-3's vocabulary
        w.put("general.name", "golden checkpoint");
        if (arch.equals("gpt2")) {
            w.put("gpt2.context_length", new GgufWriter.U32(c.get("n_ctx").getAsLong()));
            w.put("gpt2.embedding_length", new GgufWriter.U32(c.get("n_embd").getAsLong()));
            w.put("gpt2.feed_forward_length", new GgufWriter.U32(4 * c.get("n_embd").getAsLong()));
            w.put("gpt2.block_count", new GgufWriter.U32(c.get("n_layer").getAsLong()));
            w.put("gpt2.attention.head_count", new GgufWriter.U32(c.get("n_head").getAsLong()));
            w.put("gpt2.attention.layer_norm_epsilon", c.get("layer_norm_epsilon").getAsFloat());
        } else {
            u32(w, arch + ".context_length", c, "max_position_embeddings");
            u32(w, arch + ".embedding_length", c, "hidden_size");
            u32(w, arch + ".feed_forward_length", c, "intermediate_size");
            u32(w, arch + ".block_count", c, "num_hidden_layers");
            u32(w, arch + ".attention.head_count", c, "num_attention_heads");
            u32(w, arch + ".attention.head_count_kv", c, "num_key_value_heads");
            w.put(arch + ".attention.layer_norm_rms_epsilon", c.get("rms_norm_eps").getAsFloat());
            if (present(c, "rope_theta")) {
                w.put(arch + ".rope.freq_base", c.get("rope_theta").getAsFloat());
            }
            if (present(c, "head_dim")) {
                u32(w, arch + ".attention.key_length", c, "head_dim");
                u32(w, arch + ".attention.value_length", c, "head_dim");
            }
            if (present(c, "sliding_window") && !arch.equals("qwen2") && !arch.equals("qwen3")) {
                u32(w, arch + ".attention.sliding_window", c, "sliding_window");
            }
            for (String cap : new String[] {"attn_logit_softcapping", "final_logit_softcapping"}) {
                if (present(c, cap)) {
                    w.put(arch + "." + cap, c.get(cap).getAsFloat());
                }
            }
            if (present(c, "query_pre_attn_scalar")) {
                w.put(arch + ".attention.scale", (float) (1 / Math.sqrt(c.get("query_pre_attn_scalar").getAsDouble())));
            }
            if (present(c, "sliding_window_pattern")) {
                u32(w, arch + ".attention.sliding_window_pattern", c, "sliding_window_pattern");
            }
        }
        if (present(c, "bos_token_id")) {
            u32(w, "tokenizer.ggml.bos_token_id", c, "bos_token_id");
        }
        if (present(c, "eos_token_id")) {
            u32(w, "tokenizer.ggml.eos_token_id", c, "eos_token_id");
        }
        if (chatTemplate != null) {
            w.put("tokenizer.chat_template", chatTemplate);
        }
        if (vocabulary != null) {
            if (vocabulary.isEmpty()) {
                vocabulary(w, c.get("vocab_size").getAsInt());
            } else {
                vocabulary.forEach(w::put);
            }
            if (arch.equals("phi3") && !present(c, "sliding_window")) {
                u32(w, "phi3.attention.sliding_window", c, "max_position_embeddings");
            }
        }
        JsonObject rope = c.has("rope_scaling") && c.get("rope_scaling").isJsonObject()
                ? c.getAsJsonObject("rope_scaling") : null;
        if (rope != null && "longrope".equals((rope.has("rope_type") ? rope.get("rope_type") : rope.get("type"))
                .getAsString())) {
            longRope(w, arch, c);
        } else if (rope != null) {
            JsonObject r = rope;
            int headDim = present(c, "head_dim") ? c.get("head_dim").getAsInt()
                    : c.get("hidden_size").getAsInt() / c.get("num_attention_heads").getAsInt();
            float[] factors = llama3Factors(headDim, c.get("rope_theta").getAsDouble(), r.get("factor").getAsDouble(),
                    r.get("low_freq_factor").getAsDouble(), r.get("high_freq_factor").getAsDouble(),
                    r.get("original_max_position_embeddings").getAsInt());
            w.tensor("rope_freqs.weight", new long[] {factors.length}, GgufType.F32, factors);
        }
        int heads = arch.equals("gpt2") ? 0 : c.get("num_attention_heads").getAsInt();
        int kvHeads = arch.equals("gpt2") ? 0 : c.get("num_key_value_heads").getAsInt();
        try (SafeTensorsReader reader = SafeTensorsReader.open(dir.resolve("model.safetensors"))) {
            for (Map.Entry<String, TensorInfo> e : reader.tensors().entrySet()) {
                String name = e.getKey();
                long[] shape = e.getValue().toShape().getShape();
                float[] values = reader.toFloatArray(name);
                if (gemma && name.equals("lm_head.weight")) {
                    continue;
                }
                if (gemma && name.endsWith("norm.weight")) {
                    for (int i = 0; i < values.length; i++) {
                        values[i] += 1;
                    }
                }
                if (arch.equals("gpt2") && name.matches(".*(c_attn|c_proj|c_fc)\\.weight")) {
                    values = transpose(values, (int) shape[0], (int) shape[1]);
                    shape = new long[] {shape[1], shape[0]};
                }
                if (arch.equals("llama") && name.matches(".*\\.(q_proj|k_proj)\\.(weight|bias)")) {
                    values = interleave(values, (int) shape[0], name.contains("q_proj") ? heads : kvHeads);
                }
                String gguf = ggufName(name, arch);
                boolean quantize = shape.length == 2 && !name.endsWith("norm.weight")
                        && shape[1] % type.blockElements() == 0;
                w.tensor(gguf, shape, quantize ? type : GgufType.F32, values);
                if (arch.equals("gpt2") && gguf.equals("token_embd.weight")) {
                    w.tensor("output.weight", shape, quantize ? type : GgufType.F32, values);
                }
            }
        }
        w.write(file);
    }

    /**
     * Splits a GGUF file as llama.cpp's {@code gguf-split} does: {@code PREFIX-0000i-of-0000n.gguf},
     * the tensors in file order over the parts, the model's metadata in the first part only, each
     * part with {@code split.no} (from 0), {@code split.count} and {@code split.tensors.count}.
     *
     * @param source the whole file
     * @param prefix the parts' path before {@code -00001-of-...}
     * @param count the number of parts
     * @return the parts, in order
     * @throws Exception if the file cannot be read or a part written
     */
    public static List<Path> split(Path source, String prefix, int count) throws Exception {
        List<Path> parts = new ArrayList<>();
        try (GgufFile gguf = GgufFile.open(source)) {
            List<GgufTensor> all = new ArrayList<>(gguf.tensors().values());
            for (int i = 0; i < count; i++) {
                GgufWriter w = new GgufWriter();
                w.put(GgufFile.SPLIT_NO, new GgufWriter.U32(i)).put(GgufFile.SPLIT_COUNT, new GgufWriter.U32(count))
                        .put(GgufFile.SPLIT_TENSORS, all.size());
                if (i == 0) {
                    gguf.metadata().values().forEach(w::put);
                }
                for (GgufTensor t : all.subList(i * all.size() / count, (i + 1) * all.size() / count)) {
                    ByteArrayOutputStream data = new ByteArrayOutputStream();
                    for (long r = 0; r < t.rows(); r++) {
                        ByteBuffer row = t.rowBytes(r);
                        byte[] bytes = new byte[Math.toIntExact(t.type().bytes(t.rowLength()))];
                        row.duplicate().get(bytes);
                        data.write(bytes);
                    }
                    w.raw(t.name(), t.shape().getShape(), t.type().id(), data.toByteArray());
                }
                Path part = Path.of(GgufFile.partName(prefix, i + 1, count));
                w.write(part);
                parts.add(part);
            }
        }
        return parts;
    }

    /**
     * The per-frequency factors convert_hf_to_gguf.py writes as {@code rope_freqs} for Llama 3.1's
     * rope scaling: 1 for wavelengths under {@code original / high}, {@code factor} over {@code
     * original / low}, {@code 1 / ((1 - smooth) / factor + smooth)} between.
     */
    static float[] llama3Factors(int headDim, double theta, double factor, double low, double high, int original) {
        float[] factors = new float[headDim / 2];
        for (int i = 0; i < factors.length; i++) {
            float freq = (float) (1.0 / Math.pow(theta, (2.0 * i) / headDim));
            double wavelength = 2 * Math.PI / freq;
            if (wavelength < original / high) {
                factors[i] = 1;
            } else if (wavelength > original / low) {
                factors[i] = (float) factor;
            } else {
                double smooth = (original / wavelength - low) / (high - low);
                factors[i] = (float) (1 / ((1 - smooth) / factor + smooth));
            }
        }
        return factors;
    }

    /**
     * convert_hf_to_gguf.py's Phi-3 LongRoPE: the factor lists as F32 tensors {@code
     * rope_factors_long}/{@code _short}, the pre-training context, and {@code attn_factor}: the
     * config's {@code attention_factor}, else Hugging Face's default {@code sqrt(1 + ln(max /
     * original) / ln(original))} (1 when not extended).
     */
    private static void longRope(GgufWriter w, String arch, JsonObject c) {
        JsonObject r = c.getAsJsonObject("rope_scaling");
        int original = (r.has("original_max_position_embeddings") ? r : c)
                .get("original_max_position_embeddings").getAsInt();
        double scale = c.get("max_position_embeddings").getAsDouble() / original;
        double attention = r.has("attention_factor") ? r.get("attention_factor").getAsDouble()
                : scale > 1 ? Math.sqrt(1 + Math.log(scale) / Math.log(original)) : 1;
        w.put(arch + ".rope.scaling.original_context_length", new GgufWriter.U32(original));
        w.put(arch + ".rope.scaling.attn_factor", (float) attention);
        for (String set : new String[] {"long", "short"}) {
            JsonArray list = r.getAsJsonArray(set + "_factor");
            float[] factors = new float[list.size()];
            for (int i = 0; i < factors.length; i++) {
                factors[i] = list.get(i).getAsFloat();
            }
            w.tensor("rope_factors_" + set + ".weight", new long[] {factors.length}, GgufType.F32, factors);
        }
    }

    private static void vocabulary(GgufWriter w, int size) {
        List<String> tokens = new ArrayList<>();
        List<Float> scores = new ArrayList<>();
        int[] types = new int[size];
        for (int id = 0; id < size; id++) {
            if (id < 3) {
                tokens.add(new String[] {"<unk>", "<s>", "</s>"}[id]);
                types[id] = id == 0 ? 2 : 3;
            } else if (id < 3 + 256) {
                tokens.add(String.format("<0x%02X>", id - 3));
                types[id] = 6;
            } else {
                tokens.add("\u2581t" + id);
                types[id] = 1;
            }
            scores.add(types[id] == 1 ? (float) -id : 0f);
        }
        w.put("tokenizer.ggml.model", "llama");
        w.put("tokenizer.ggml.tokens", tokens);
        w.put("tokenizer.ggml.scores", scores);
        w.put("tokenizer.ggml.token_type", new GgufWriter.I32Array(types));
    }

    /** A metadata value as read ({@code Long}, {@code Double}, lists of them) in the GGUF type llama.cpp reads it as. */
    private static Object writable(String key, Object value) {
        if (value instanceof Long id && key.endsWith("_token_id")) {
            return new GgufWriter.U32(id);
        }
        if (value instanceof List<?> list && !list.isEmpty() && list.get(0) instanceof Long) {
            return new GgufWriter.I32Array(list.stream().mapToInt(v -> Math.toIntExact((Long) v)).toArray());
        }
        if (value instanceof List<?> list && !list.isEmpty() && list.get(0) instanceof Double) {
            return list.stream().map(v -> ((Double) v).floatValue()).toList();
        }
        return value;
    }

    private static boolean present(JsonObject c, String key) {
        JsonElement v = c.get(key);
        return v != null && !v.isJsonNull();
    }

    private static void u32(GgufWriter w, String key, JsonObject c, String field) {
        w.put(key, new GgufWriter.U32(c.get(field).getAsLong()));
    }

    /** llama.cpp's tensor name of a Hugging Face one. */
    static String ggufName(String name, String arch) {
        Matcher m = LAYER.matcher(name);
        if (!m.matches()) {
            return switch (name.replaceFirst("\\.(weight|bias)$", "")) {
                case "model.embed_tokens", "wte" -> "token_embd";
                case "wpe" -> "position_embd";
                case "model.norm", "ln_f" -> "output_norm";
                case "lm_head" -> "output";
                default -> throw new IllegalArgumentException("cannot map " + name);
            } + name.substring(name.lastIndexOf('.'));
        }
        String module = switch (m.group(2)) {
            case "input_layernorm", "ln_1" -> "attn_norm";
            case "self_attn.q_proj" -> "attn_q";
            case "self_attn.k_proj" -> "attn_k";
            case "self_attn.v_proj" -> "attn_v";
            case "self_attn.o_proj", "attn.c_proj" -> "attn_output";
            case "self_attn.qkv_proj", "attn.c_attn" -> "attn_qkv";
            case "self_attn.q_norm" -> "attn_q_norm";
            case "self_attn.k_norm" -> "attn_k_norm";
            case "post_attention_layernorm" -> arch.equals("gemma2") || arch.equals("gemma3")
                    ? "post_attention_norm" : "ffn_norm";
            case "pre_feedforward_layernorm", "ln_2" -> "ffn_norm";
            case "post_feedforward_layernorm" -> "post_ffw_norm";
            case "mlp.gate_proj" -> "ffn_gate";
            case "mlp.up_proj", "mlp.gate_up_proj", "mlp.c_fc" -> "ffn_up";
            case "mlp.down_proj", "mlp.c_proj" -> "ffn_down";
            default -> throw new IllegalArgumentException("cannot map " + name);
        };
        return "blk." + m.group(1) + "." + module + "." + m.group(3);
    }

    private static float[] transpose(float[] v, int rows, int cols) {
        float[] t = new float[v.length];
        for (int r = 0; r < rows; r++) {
            for (int k = 0; k < cols; k++) {
                t[k * rows + r] = v[r * cols + k];
            }
        }
        return t;
    }

    /**
     * convert_hf_to_gguf.py's {@code LlamaModel.permute}: per head, w.reshape(2, d/2, ...) with its
     * first two axes swapped, i.e. stored row {@code 2i + j} = Hugging Face row {@code j * d/2 + i}.
     */
    static float[] interleave(float[] v, int rows, int heads) {
        int cols = v.length / rows;
        int d = rows / heads;
        float[] out = new float[v.length];
        for (int h = 0; h < heads; h++) {
            for (int j = 0; j < 2; j++) {
                for (int i = 0; i < d / 2; i++) {
                    System.arraycopy(v, (h * d + j * d / 2 + i) * cols, out, (h * d + 2 * i + j) * cols, cols);
                }
            }
        }
        return out;
    }
}
