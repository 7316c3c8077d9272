package io.github.djlllmzoo.zoo.gguf;

import com.google.gson.JsonArray;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A GGUF file's tokenizer ({@code tokenizer.ggml.*}) rebuilt as the Hugging Face {@code
 * tokenizer.json} and {@code tokenizer_config.json} that give llama.cpp's token ids:
 *
 * <ul>
 *   <li>{@code llama} (SentencePiece): llama.cpp merges, at each step, the adjacent pair whose
 *       concatenation is the piece of highest score, and falls back to byte pieces. A BPE model
 *       with byte fallback whose merges are every split of each piece into two pieces, ranked by
 *       the piece's score (as Hugging Face's SentencePiece converter builds them), does the same;
 *       the text is prefixed with {@code ▁} when {@code add_space_prefix} says so and its spaces
 *       become {@code ▁}.
 *   <li>{@code gpt2} (byte-level BPE): the stored merges, and the pre-tokenizer regex {@code
 *       tokenizer.ggml.pre} names (llama.cpp's {@code gpt-2}, {@code llama-bpe}, {@code qwen2}).
 * </ul>
 *
 * Control and user-defined tokens become added tokens (control ones special); BOS/EOS are added as
 * {@code add_bos_token}/{@code add_eos_token} say, with llama.cpp's defaults per model.
 */
final class GgufTokenizer {

    private static final int TYPE_NORMAL = 1;
    private static final int TYPE_UNKNOWN = 2;
    private static final int TYPE_CONTROL = 3;
    private static final int TYPE_USER_DEFINED = 4;

    private static final String SPACE = "\u2581";

    /** GPT-2's split regex (Hugging Face's ByteLevel pre-tokenizer with use_regex applies it). */
    private static final String GPT2 = "gpt2";

    /** The pre-tokenizer regexes of llama.cpp's BPE pre-types, as their tokenizer.json files give them. */
    private static final Map<String, String> SPLIT_REGEX = Map.of(
            "llama-bpe",
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                    + "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
            "qwen2",
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                    + "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");

    /** Other names llama.cpp gives the same pre-tokenizers. */
    private static final Map<String, String> PRE_ALIASES = Map.of(
            "llama3", "llama-bpe", "llama-v3", "llama-bpe", "deepseek-r1-qwen", "qwen2", "gpt-2", GPT2);

    private GgufTokenizer() {}

    /** A tokenizer's two files. */
    record Files(JsonObject tokenizer, JsonObject tokenizerConfig) {}

    /**
     * Builds the tokenizer of a GGUF file.
     *
     * @param m the file's metadata
     * @return its tokenizer.json and tokenizer_config.json, or {@code null} when the file has no
     *     tokenizer
     * @throws InvalidGgufException naming the tokenizer key the project does not support
     */
    static Files of(GgufMetadata m) throws InvalidGgufException {
        if (!m.has("tokenizer.ggml.model")) {
            return null;
        }
        String model = m.requireString("tokenizer.ggml.model");
        boolean spm = model.equals("llama");
        if (!spm && !model.equals(GPT2)) {
            throw new InvalidGgufException(m.file(), "tokenizer.ggml.model",
                    "tokenizer '" + model + "' is not supported; supported: llama (SentencePiece), gpt2 (byte-level BPE)");
        }
        List<String> tokens = m.optList("tokenizer.ggml.tokens", String.class);
        if (tokens == null) {
            throw new InvalidGgufException(m.file(), "tokenizer.ggml.tokens", "required metadata key is missing");
        }
        List<Long> types = m.optList("tokenizer.ggml.token_type", Long.class);
        if (types != null && types.size() != tokens.size()) {
            throw new InvalidGgufException(m.file(), "tokenizer.ggml.token_type",
                    "has " + types.size() + " entries for " + tokens.size() + " tokens");
        }
        String pre = spm ? null : preTokenizer(m);
        boolean addBos = m.optBoolean("tokenizer.ggml.add_bos_token", spm || "llama-bpe".equals(pre));
        boolean addEos = m.optBoolean("tokenizer.ggml.add_eos_token", false);
        boolean spacePrefix = spm && m.optBoolean("tokenizer.ggml.add_space_prefix", true);

        JsonObject vocab = new JsonObject();
        JsonArray added = new JsonArray();
        for (int id = 0; id < tokens.size(); id++) {
            String token = tokens.get(id);
            if (vocab.has(token)) {
                continue; // a repeated piece (padding placeholders): its first id keeps the text
            }
            vocab.addProperty(token, id);
            int type = types == null ? TYPE_NORMAL : types.get(id).intValue();
            if (type == TYPE_CONTROL || type == TYPE_UNKNOWN || type == TYPE_USER_DEFINED) {
                JsonObject t = new JsonObject();
                t.addProperty("id", id);
                t.addProperty("content", token);
                t.addProperty("single_word", false);
                t.addProperty("lstrip", false);
                t.addProperty("rstrip", false);
                t.addProperty("normalized", false);
                t.addProperty("special", type != TYPE_USER_DEFINED);
                added.add(t);
            }
        }
        String unk = tokenText(m, tokens, "tokenizer.ggml.unknown_token_id");
        String bos = tokenText(m, tokens, "tokenizer.ggml.bos_token_id");
        String eos = tokenText(m, tokens, "tokenizer.ggml.eos_token_id");

        JsonObject bpe = new JsonObject();
        bpe.addProperty("type", "BPE");
        bpe.add("dropout", JsonNull.INSTANCE);
        bpe.add("unk_token", spm && unk != null ? new com.google.gson.JsonPrimitive(unk) : JsonNull.INSTANCE);
        bpe.add("continuing_subword_prefix", JsonNull.INSTANCE);
        bpe.add("end_of_word_suffix", JsonNull.INSTANCE);
        bpe.addProperty("fuse_unk", spm);
        bpe.addProperty("byte_fallback", spm);
        bpe.addProperty("ignore_merges", false);
        bpe.add("vocab", vocab);
        bpe.add("merges", spm ? scoreMerges(m, tokens, types) : storedMerges(m));

        JsonObject json = new JsonObject();
        json.addProperty("version", "1.0");
        json.add("truncation", JsonNull.INSTANCE);
        json.add("padding", JsonNull.INSTANCE);
        json.add("added_tokens", added);
        if (spm) {
            JsonArray normalizers = new JsonArray();
            if (spacePrefix) {
                normalizers.add(object("type", "Prepend", "prepend", SPACE));
            }
            JsonObject replace = object("type", "Replace", "content", SPACE);
            replace.add("pattern", object("String", " "));
            normalizers.add(replace);
            JsonObject normalizer = object("type", "Sequence");
            normalizer.add("normalizers", normalizers);
            json.add("normalizer", normalizer);
            json.add("pre_tokenizer", JsonNull.INSTANCE);
        } else {
            json.add("normalizer", JsonNull.INSTANCE);
            json.add("pre_tokenizer", byteLevelPreTokenizer(pre));
        }
        json.add("post_processor", postProcessor(addBos ? bos : null, addEos ? eos : null, tokens));
        json.add("decoder", spm ? spmDecoder(spacePrefix) : byteLevel());
        json.add("model", bpe);

        JsonObject config = new JsonObject();
        config.addProperty("add_bos_token", addBos && bos != null);
        config.addProperty("add_eos_token", addEos && eos != null);
        putIfPresent(config, "bos_token", bos);
        putIfPresent(config, "eos_token", eos);
        putIfPresent(config, "unk_token", unk);
        putIfPresent(config, "pad_token", tokenText(m, tokens, "tokenizer.ggml.padding_token_id"));
        putIfPresent(config, "chat_template", m.optString("tokenizer.chat_template", null));
        config.addProperty("clean_up_tokenization_spaces", false);
        return new Files(json, config);
    }

    private static String preTokenizer(GgufMetadata m) throws InvalidGgufException {
        String pre = m.optString("tokenizer.ggml.pre", "gpt-2");
        String canonical = PRE_ALIASES.getOrDefault(pre, pre);
        if (!canonical.equals(GPT2) && !SPLIT_REGEX.containsKey(canonical)) {
            throw new InvalidGgufException(m.file(), "tokenizer.ggml.pre",
                    "pre-tokenizer '" + pre + "' is not supported; supported: gpt-2, llama-bpe (llama3), qwen2");
        }
        return canonical;
    }

    private static String tokenText(GgufMetadata m, List<String> tokens, String key) throws InvalidGgufException {
        if (!m.has(key)) {
            return null;
        }
        long id = m.requireLong(key);
        if (id < 0 || id >= tokens.size()) {
            // llama.cpp writes -1 (as u32) for "none"
            return null;
        }
        return tokens.get((int) id);
    }

    /**
     * Every split of each normal piece into two pieces, the pieces of higher score first (within a
     * piece, by the ids of its parts), as Hugging Face's SentencePiece converter ranks them.
     */
    private static JsonArray scoreMerges(GgufMetadata m, List<String> tokens, List<Long> types)
            throws InvalidGgufException {
        List<Double> scores = m.optNumbers("tokenizer.ggml.scores");
        if (scores == null || scores.size() != tokens.size()) {
            throw new InvalidGgufException(m.file(), "tokenizer.ggml.scores",
                    scores == null ? "a llama tokenizer needs scores" : "has " + scores.size() + " entries for "
                            + tokens.size() + " tokens");
        }
        Map<String, Integer> ids = new HashMap<>();
        for (int id = 0; id < tokens.size(); id++) {
            ids.putIfAbsent(tokens.get(id), id);
        }
        List<int[]> merges = new ArrayList<>(); // {piece id, left id, right id}
        for (int id = 0; id < tokens.size(); id++) {
            if (types != null && types.get(id).intValue() != TYPE_NORMAL) {
                continue;
            }
            String piece = tokens.get(id);
            for (int cut = piece.offsetByCodePoints(0, 1); cut < piece.length();
                    cut = piece.offsetByCodePoints(cut, 1)) {
                Integer left = ids.get(piece.substring(0, cut));
                Integer right = ids.get(piece.substring(cut));
                if (left != null && right != null) {
                    merges.add(new int[] {id, left, right});
                }
            }
        }
        merges.sort(Comparator.<int[]>comparingDouble(x -> -scores.get(x[0]))
                .thenComparingInt(x -> x[1])
                .thenComparingInt(x -> x[2]));
        JsonArray out = new JsonArray();
        for (int[] merge : merges) {
            out.add(tokens.get(merge[1]) + " " + tokens.get(merge[2]));
        }
        return out;
    }

    private static JsonArray storedMerges(GgufMetadata m) throws InvalidGgufException {
        List<String> merges = m.optList("tokenizer.ggml.merges", String.class);
        if (merges == null) {
            throw new InvalidGgufException(m.file(), "tokenizer.ggml.merges", "a gpt2 tokenizer needs merges");
        }
        JsonArray out = new JsonArray();
        merges.forEach(out::add);
        return out;
    }

    private static JsonObject byteLevelPreTokenizer(String pre) {
        if (pre.equals(GPT2)) {
            JsonObject byteLevel = byteLevel();
            byteLevel.addProperty("use_regex", true);
            return byteLevel;
        }
        JsonObject split = object("type", "Split", "behavior", "Isolated");
        split.add("pattern", object("Regex", SPLIT_REGEX.get(pre)));
        split.addProperty("invert", false);
        JsonArray steps = new JsonArray();
        steps.add(split);
        steps.add(byteLevel());
        JsonObject sequence = object("type", "Sequence");
        sequence.add("pretokenizers", steps);
        return sequence;
    }

    private static JsonObject byteLevel() {
        JsonObject byteLevel = object("type", "ByteLevel");
        byteLevel.addProperty("add_prefix_space", false);
        byteLevel.addProperty("trim_offsets", true);
        byteLevel.addProperty("use_regex", false);
        return byteLevel;
    }

    private static JsonObject spmDecoder(boolean spacePrefix) {
        JsonArray steps = new JsonArray();
        JsonObject replace = object("type", "Replace", "content", " ");
        replace.add("pattern", object("String", SPACE));
        steps.add(replace);
        steps.add(object("type", "ByteFallback"));
        steps.add(object("type", "Fuse"));
        if (spacePrefix) {
            JsonObject strip = object("type", "Strip", "content", " ");
            strip.addProperty("start", 1);
            strip.addProperty("stop", 0);
            steps.add(strip);
        }
        JsonObject decoder = object("type", "Sequence");
        decoder.add("decoders", steps);
        return decoder;
    }

    /** BOS before and EOS after the text, as the file asks; none when it asks for neither. */
    private static JsonObject postProcessor(String bos, String eos, List<String> tokens) {
        JsonArray single = new JsonArray();
        JsonArray pair = new JsonArray();
        for (String sequence : new String[] {"A", "B"}) {
            int typeId = sequence.equals("A") ? 0 : 1;
            JsonArray target = new JsonArray();
            if (bos != null) {
                target.add(templatePart("SpecialToken", bos, typeId));
            }
            target.add(templatePart("Sequence", sequence, typeId));
            if (eos != null) {
                target.add(templatePart("SpecialToken", eos, typeId));
            }
            if (typeId == 0) {
                single.addAll(target);
            }
            pair.addAll(target);
        }
        JsonObject special = new JsonObject();
        for (String token : new String[] {bos, eos}) {
            if (token != null) {
                JsonObject entry = object("id", token);
                JsonArray ids = new JsonArray();
                ids.add(tokens.indexOf(token));
                entry.add("ids", ids);
                JsonArray names = new JsonArray();
                names.add(token);
                entry.add("tokens", names);
                special.add(token, entry);
            }
        }
        JsonObject processor = object("type", "TemplateProcessing");
        processor.add("single", single);
        processor.add("pair", pair);
        processor.add("special_tokens", special);
        return processor;
    }

    private static JsonObject templatePart(String kind, String id, int typeId) {
        JsonObject part = object("id", id);
        part.addProperty("type_id", typeId);
        JsonObject o = new JsonObject();
        o.add(kind, part);
        return o;
    }

    private static JsonObject object(String... keyValues) {
        JsonObject o = new JsonObject();
        for (int i = 0; i < keyValues.length; i += 2) {
            o.addProperty(keyValues[i], keyValues[i + 1]);
        }
        return o;
    }

    private static void putIfPresent(JsonObject o, String key, String value) {
        if (value != null) {
            o.addProperty(key, value);
        }
    }
}
