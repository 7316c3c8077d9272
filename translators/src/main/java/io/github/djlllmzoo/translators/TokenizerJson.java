package io.github.djlllmzoo.translators;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.nio.file.Path;
import java.util.Map;

/** Facts read from a Hugging Face {@code tokenizer.json} that DJL's tokenizer does not expose. */
final class TokenizerJson {

    private TokenizerJson() {}

    /**
     * The number of ids the tokenizer can produce: one past the largest id of its model vocabulary
     * ({@code model.vocab}, an object for BPE/WordPiece or a list for Unigram) and its
     * {@code added_tokens}.
     *
     * @param file the file the JSON came from, for messages
     * @param json the tokenizer.json text
     * @return the largest id + 1
     * @throws InvalidCheckpointException if the JSON has no readable vocabulary
     */
    static int vocabularySize(Path file, String json) throws InvalidCheckpointException {
        try {
            JsonObject root = JsonParser.parseString(json).getAsJsonObject();
            long max = -1;
            JsonObject model = root.getAsJsonObject("model");
            JsonElement vocab = model == null ? null : model.get("vocab");
            if (vocab != null && vocab.isJsonObject()) {
                for (Map.Entry<String, JsonElement> e : vocab.getAsJsonObject().entrySet()) {
                    max = Math.max(max, e.getValue().getAsLong());
                }
            } else if (vocab != null && vocab.isJsonArray()) {
                max = vocab.getAsJsonArray().size() - 1L;
            } else {
                throw new InvalidCheckpointException(file, "model.vocab", "tokenizer has no vocabulary");
            }
            JsonElement added = root.get("added_tokens");
            if (added != null && added.isJsonArray()) {
                for (JsonElement token : added.getAsJsonArray()) {
                    max = Math.max(max, token.getAsJsonObject().get("id").getAsLong());
                }
            }
            return Math.toIntExact(max + 1);
        } catch (JsonParseException | IllegalStateException | ClassCastException | NullPointerException
                | UnsupportedOperationException | NumberFormatException | ArithmeticException e) {
            throw new InvalidCheckpointException(file, null, "not a valid tokenizer.json: " + e.getMessage(), e);
        }
    }
}
