package io.github.djlllmzoo.translators;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Builds the {@code tokenizer.json} of a GPT-2-style byte-level BPE tokenizer from the older
 * {@code vocab.json} + {@code merges.txt} pair, as Hugging Face's {@code GPT2TokenizerFast} does:
 * byte-level pre-tokenizer, decoder and post-processor, plus the special tokens that
 * {@code tokenizer_config.json} declares.
 */
final class ByteLevelBpeJson {

    private ByteLevelBpeJson() {}

    static String build(Path vocab, Path merges, Path tokenizerConfig) throws InvalidCheckpointException {
        JsonObject model = new JsonObject();
        model.addProperty("type", "BPE");
        model.add("dropout", null);
        model.add("unk_token", null);
        model.addProperty("continuing_subword_prefix", "");
        model.addProperty("end_of_word_suffix", "");
        model.addProperty("fuse_unk", false);
        model.addProperty("byte_fallback", false);
        JsonObject vocabJson = ConfigJson.read(vocab).json();
        model.add("vocab", vocabJson);
        model.add("merges", readMerges(merges));

        JsonObject root = new JsonObject();
        root.addProperty("version", "1.0");
        root.add("truncation", null);
        root.add("padding", null);
        root.add("added_tokens", addedTokens(tokenizerConfig));
        root.add("normalizer", null);
        root.add("pre_tokenizer", byteLevel(false, true));
        root.add("post_processor", byteLevel(true, false));
        root.add("decoder", byteLevel(true, true));
        root.add("model", model);
        return root.toString();
    }

    private static JsonArray readMerges(Path merges) throws InvalidCheckpointException {
        List<String> lines;
        try {
            lines = Files.readAllLines(merges, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new InvalidCheckpointException(merges, null, "cannot read: " + e.getMessage(), e);
        }
        JsonArray out = new JsonArray();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isEmpty() || (i == 0 && line.startsWith("#version"))) {
                continue;
            }
            if (line.split(" ").length != 2) {
                throw new InvalidCheckpointException(
                        merges, "line " + (i + 1), "expected two space-separated symbols, found: " + line);
            }
            out.add(line);
        }
        return out;
    }

    private static JsonArray addedTokens(Path tokenizerConfig) throws InvalidCheckpointException {
        JsonArray out = new JsonArray();
        if (!Files.isRegularFile(tokenizerConfig)) {
            return out;
        }
        ConfigJson config = ConfigJson.read(tokenizerConfig);
        ConfigJson decoder = config.optObject("added_tokens_decoder");
        if (decoder == null) {
            return out;
        }
        for (Map.Entry<String, JsonElement> e : decoder.json().entrySet()) {
            if (!e.getValue().isJsonObject()) {
                throw new InvalidCheckpointException(
                        tokenizerConfig, "added_tokens_decoder." + e.getKey(), "expected an object");
            }
            JsonObject token = e.getValue().getAsJsonObject().deepCopy();
            try {
                token.addProperty("id", Integer.parseInt(e.getKey()));
            } catch (NumberFormatException ex) {
                throw new InvalidCheckpointException(
                        tokenizerConfig, "added_tokens_decoder." + e.getKey(), "key must be a token id", ex);
            }
            token.remove("__type");
            out.add(token);
        }
        return out;
    }

    private static JsonObject byteLevel(boolean addPrefixSpace, boolean trimOffsets) {
        JsonObject o = new JsonObject();
        o.addProperty("type", "ByteLevel");
        o.addProperty("add_prefix_space", addPrefixSpace);
        o.addProperty("trim_offsets", trimOffsets);
        o.addProperty("use_regex", true);
        return o;
    }
}
