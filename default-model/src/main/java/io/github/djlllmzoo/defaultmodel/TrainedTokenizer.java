package io.github.djlllmzoo.defaultmodel;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A byte-level BPE tokenizer learnt by {@link ByteLevelBpeTrainer}: its vocabulary, its merges and
 * its special tokens, and the Hugging Face files that describe it.
 *
 * <p>{@link #save(Path)} writes {@code tokenizer.json} with the structure of GPT-2's own (model
 * {@code BPE} with {@code "a b"} merges, {@code ByteLevel} pre-tokenizer without prefix space,
 * {@code ByteLevel} decoder, the special tokens as {@code added_tokens}); its post-processor is
 * GPT-2's {@code ByteLevel} when no BOS is added, or {@code Sequence[ByteLevel,
 * TemplateProcessing("BOS $A")]} when it is, so that encoding with special tokens gives {@code [BOS,
 * ...]}. It also writes {@code tokenizer_config.json} ({@code add_bos_token}, {@code
 * bos/eos/pad_token}, {@code model_max_length}) and {@code special_tokens_map.json}. The output is a
 * pure function of the training input: the same corpus and options give the same bytes.
 */
public final class TrainedTokenizer {

    private static final Gson GSON =
            new GsonBuilder().setPrettyPrinting().disableHtmlEscaping().serializeNulls().create();

    private final Map<String, Integer> vocab;
    private final List<String> merges;
    private final List<String> specialTokens;
    private final String bosToken;
    private final String eosToken;
    private final String padToken;
    private final boolean addBosToken;
    private final int modelMaxLength;

    TrainedTokenizer(
            Map<String, Integer> vocab,
            List<String> merges,
            List<String> specialTokens,
            String bosToken,
            String eosToken,
            String padToken,
            boolean addBosToken,
            int modelMaxLength) {
        this.vocab = Collections.unmodifiableMap(new LinkedHashMap<>(vocab));
        this.merges = List.copyOf(merges);
        this.specialTokens = List.copyOf(specialTokens);
        this.bosToken = bosToken;
        this.eosToken = eosToken;
        this.padToken = padToken;
        this.addBosToken = addBosToken;
        this.modelMaxLength = modelMaxLength;
    }

    /**
     * Returns the number of tokens: special tokens, the 256 bytes and one per new merged token. It
     * equals the requested size unless the corpus ran out of pairs to merge.
     *
     * @return the vocabulary size (the model's embedding rows)
     */
    public int vocabSize() {
        return vocab.size();
    }

    /**
     * Returns the vocabulary in id order: token (in byte-level characters, e.g. {@code "Ġthe"} for
     * " the") to id.
     *
     * @return an unmodifiable map, iterating by increasing id
     */
    public Map<String, Integer> vocab() {
        return vocab;
    }

    /**
     * Returns the merges in the order they were learnt (their rank), each as {@code "left right"}.
     *
     * @return an unmodifiable list
     */
    public List<String> merges() {
        return merges;
    }

    /**
     * Returns the special tokens, whose ids are 0, 1, ... in this order.
     *
     * @return an unmodifiable list
     */
    public List<String> specialTokens() {
        return specialTokens;
    }

    /**
     * Returns the id of a token given in byte-level characters, or -1.
     *
     * @param token a vocabulary entry, e.g. {@code "<|endoftext|>"} or {@code "Ġtime"}
     * @return its id, or -1 when it is not in the vocabulary
     */
    public int tokenId(String token) {
        Integer id = vocab.get(token);
        return id == null ? -1 : id;
    }

    /**
     * Returns the BOS token (by default {@code <|endoftext|>}).
     *
     * @return the BOS token, or {@code null} when there is none
     */
    public String bosToken() {
        return bosToken;
    }

    /**
     * Returns the id of the BOS token.
     *
     * @return its id (0 with the default special tokens), or -1 when there is none
     */
    public int bosTokenId() {
        return bosToken == null ? -1 : tokenId(bosToken);
    }

    /**
     * Returns the EOS token (by default {@code <|endoftext|>}, the same as BOS).
     *
     * @return the EOS token, or {@code null} when there is none
     */
    public String eosToken() {
        return eosToken;
    }

    /**
     * Returns the id of the EOS token.
     *
     * @return its id (0 with the default special tokens), or -1 when there is none
     */
    public int eosTokenId() {
        return eosToken == null ? -1 : tokenId(eosToken);
    }

    /**
     * Returns the padding token (by default {@code <pad>}).
     *
     * @return the padding token, or {@code null} when there is none
     */
    public String padToken() {
        return padToken;
    }

    /**
     * Returns the id of the padding token.
     *
     * @return its id (1 with the default special tokens), or -1 when there is none
     */
    public int padTokenId() {
        return padToken == null ? -1 : tokenId(padToken);
    }

    /**
     * Whether encoding with special tokens puts the BOS token in front.
     *
     * @return the {@code add_bos_token} setting
     */
    public boolean addBosToken() {
        return addBosToken;
    }

    /**
     * Returns {@code model_max_length} of {@code tokenizer_config.json}.
     *
     * @return the model's context length in tokens
     */
    public int modelMaxLength() {
        return modelMaxLength;
    }

    /**
     * Writes {@code tokenizer.json}, {@code tokenizer_config.json} and {@code
     * special_tokens_map.json} into {@code dir} (created if needed). Each file is written to a
     * temporary file and renamed over the old one, so a reader never sees a partial file.
     *
     * @param dir the model or tokenizer directory
     * @throws IOException if a file cannot be written
     */
    public void save(Path dir) throws IOException {
        AtomicFiles.writeString(dir.resolve(CheckpointFiles.TOKENIZER), toTokenizerJson());
        AtomicFiles.writeString(dir.resolve(CheckpointFiles.TOKENIZER_CONFIG), toTokenizerConfigJson());
        AtomicFiles.writeString(dir.resolve(CheckpointFiles.SPECIAL_TOKENS_MAP), toSpecialTokensMapJson());
    }

    /**
     * Returns the Hugging Face {@code tokenizer.json} text.
     *
     * @return pretty-printed JSON ending with a newline
     */
    public String toTokenizerJson() {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("version", "1.0");
        root.put("truncation", null);
        root.put("padding", null);
        List<Object> added = new ArrayList<>();
        for (String s : specialTokens) {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("id", vocab.get(s));
            t.put("content", s);
            t.put("single_word", false);
            t.put("lstrip", false);
            t.put("rstrip", false);
            t.put("normalized", false);
            t.put("special", true);
            added.add(t);
        }
        root.put("added_tokens", added);
        root.put("normalizer", null);
        root.put("pre_tokenizer", byteLevel(false, true));
        Map<String, Object> gpt2PostProcessor = byteLevel(true, false);
        if (addBosToken) {
            Map<String, Object> seq = new LinkedHashMap<>();
            seq.put("type", "Sequence");
            seq.put("processors", List.of(gpt2PostProcessor, bosTemplate()));
            root.put("post_processor", seq);
        } else {
            root.put("post_processor", gpt2PostProcessor);
        }
        root.put("decoder", byteLevel(true, true));
        Map<String, Object> model = new LinkedHashMap<>();
        model.put("type", "BPE");
        model.put("dropout", null);
        model.put("unk_token", null);
        model.put("continuing_subword_prefix", "");
        model.put("end_of_word_suffix", "");
        model.put("fuse_unk", false);
        model.put("byte_fallback", false);
        model.put("vocab", vocab);
        model.put("merges", merges);
        root.put("model", model);
        return GSON.toJson(root) + "\n";
    }

    private static Map<String, Object> byteLevel(boolean addPrefixSpace, boolean trimOffsets) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", "ByteLevel");
        m.put("add_prefix_space", addPrefixSpace);
        m.put("trim_offsets", trimOffsets);
        m.put("use_regex", true);
        return m;
    }

    private Map<String, Object> bosTemplate() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", "TemplateProcessing");
        m.put("single", List.of(special(0), sequence("A", 0)));
        m.put("pair", List.of(special(0), sequence("A", 0), special(1), sequence("B", 1)));
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("id", bosToken);
        entry.put("ids", List.of(bosTokenId()));
        entry.put("tokens", List.of(bosToken));
        m.put("special_tokens", Map.of(bosToken, entry));
        return m;
    }

    private Map<String, Object> special(int typeId) {
        Map<String, Object> inner = new LinkedHashMap<>();
        inner.put("id", bosToken);
        inner.put("type_id", typeId);
        return Map.of("SpecialToken", inner);
    }

    private static Map<String, Object> sequence(String id, int typeId) {
        Map<String, Object> inner = new LinkedHashMap<>();
        inner.put("id", id);
        inner.put("type_id", typeId);
        return Map.of("Sequence", inner);
    }

    /**
     * Returns the Hugging Face {@code tokenizer_config.json} text (keys sorted, as transformers
     * writes them).
     *
     * @return pretty-printed JSON ending with a newline
     */
    public String toTokenizerConfigJson() {
        Map<String, Object> m = new TreeMap<>();
        m.put("add_bos_token", addBosToken);
        m.put("add_eos_token", false);
        m.put("add_prefix_space", false);
        Map<String, Object> decoder = new LinkedHashMap<>();
        for (String s : specialTokens) {
            decoder.put(String.valueOf(vocab.get(s)), addedToken(s, true));
        }
        m.put("added_tokens_decoder", decoder);
        m.put("bos_token", bosToken);
        m.put("clean_up_tokenization_spaces", false);
        m.put("eos_token", eosToken);
        m.put("model_max_length", modelMaxLength);
        m.put("pad_token", padToken);
        m.put("tokenizer_class", "PreTrainedTokenizerFast");
        return GSON.toJson(m) + "\n";
    }

    /**
     * Returns the Hugging Face {@code special_tokens_map.json} text.
     *
     * @return pretty-printed JSON ending with a newline
     */
    public String toSpecialTokensMapJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        if (bosToken != null) {
            m.put("bos_token", addedToken(bosToken, false));
        }
        if (eosToken != null) {
            m.put("eos_token", addedToken(eosToken, false));
        }
        if (padToken != null) {
            m.put("pad_token", addedToken(padToken, false));
        }
        return GSON.toJson(m) + "\n";
    }

    private static Map<String, Object> addedToken(String content, boolean withSpecial) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("content", content);
        t.put("lstrip", false);
        t.put("normalized", false);
        t.put("rstrip", false);
        t.put("single_word", false);
        if (withSpecial) {
            t.put("special", true);
        }
        return t;
    }
}
