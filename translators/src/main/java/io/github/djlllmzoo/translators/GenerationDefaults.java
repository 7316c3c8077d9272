package io.github.djlllmzoo.translators;

import com.google.gson.JsonElement;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The generation settings a checkpoint ships in {@code generation_config.json}, as parsed values
 * with Hugging Face's field names. A field absent (or null) in the file is {@code null} here (an
 * empty list for the token-id lists), so callers can tell "not given" from a value; turning these
 * defaults into a {@link GenerationConfig} is the caller's choice.
 *
 * @param bosTokenId {@code bos_token_id}
 * @param eosTokenIds {@code eos_token_id}, one id or a list (Llama 3): any of them ends a sequence
 * @param padTokenId {@code pad_token_id}
 * @param doSample {@code do_sample}: sample instead of decoding greedily
 * @param temperature {@code temperature} (≥ 0)
 * @param topK {@code top_k} (≥ 0; 0 disables it)
 * @param topP {@code top_p} (in (0, 1])
 * @param repetitionPenalty {@code repetition_penalty} (&gt; 0; 1 disables it)
 * @param maxNewTokens {@code max_new_tokens} (≥ 1)
 * @param maxLength {@code max_length}: prompt plus new tokens (≥ 1)
 * @param minP {@code min_p} (in [0, 1]; 0 disables it)
 * @param numReturnSequences {@code num_return_sequences} (≥ 1)
 * @param stopStrings {@code stop_strings}, one string or a list (empty when absent)
 */
public record GenerationDefaults(
        Integer bosTokenId,
        List<Integer> eosTokenIds,
        Integer padTokenId,
        Boolean doSample,
        Double temperature,
        Integer topK,
        Double topP,
        Double repetitionPenalty,
        Integer maxNewTokens,
        Integer maxLength,
        Double minP,
        Integer numReturnSequences,
        List<String> stopStrings) {

    /**
     * Copies the list.
     *
     * @param bosTokenId {@code bos_token_id}
     * @param eosTokenIds {@code eos_token_id}, one id or a list (Llama 3): any of them ends a sequence
     * @param padTokenId {@code pad_token_id}
     * @param doSample {@code do_sample}: sample instead of decoding greedily
     * @param temperature {@code temperature} (≥ 0)
     * @param topK {@code top_k} (≥ 0; 0 disables it)
     * @param topP {@code top_p} (in (0, 1])
     * @param repetitionPenalty {@code repetition_penalty} (&gt; 0; 1 disables it)
     * @param maxNewTokens {@code max_new_tokens} (≥ 1)
     * @param maxLength {@code max_length}: prompt plus new tokens (≥ 1)
     * @param minP {@code min_p} (in [0, 1]; 0 disables it)
     * @param numReturnSequences {@code num_return_sequences} (≥ 1)
     * @param stopStrings {@code stop_strings}, one string or a list (empty when absent)
     */
    public GenerationDefaults {
        eosTokenIds = List.copyOf(eosTokenIds);
        stopStrings = List.copyOf(stopStrings);
    }

    /**
     * Reads {@code generation_config.json} of a checkpoint directory.
     *
     * @param dir the checkpoint directory
     * @return the parsed settings, or empty when the directory has no such file
     * @throws InvalidCheckpointException if the file is not valid JSON or a field is invalid
     */
    public static Optional<GenerationDefaults> read(Path dir) throws InvalidCheckpointException {
        Path file = dir.resolve(CheckpointFiles.GENERATION_CONFIG);
        if (!Files.exists(file)) {
            return Optional.empty();
        }
        return Optional.of(parse(ConfigJson.read(file)));
    }

    /**
     * Parses a {@code generation_config.json} object.
     *
     * @param json the parsed file
     * @return the settings
     * @throws InvalidCheckpointException naming the field at fault
     */
    public static GenerationDefaults parse(ConfigJson json) throws InvalidCheckpointException {
        Double temperature = optDouble(json, "temperature");
        if (temperature != null && temperature < 0) {
            throw json.invalid("temperature", "must not be negative");
        }
        Integer topK = json.optInteger("top_k");
        if (topK != null && topK < 0) {
            throw json.invalid("top_k", "must not be negative");
        }
        Double topP = optDouble(json, "top_p");
        if (topP != null && !(topP > 0 && topP <= 1)) {
            throw json.invalid("top_p", "must be in (0, 1]");
        }
        Double repetitionPenalty = optDouble(json, "repetition_penalty");
        if (repetitionPenalty != null && repetitionPenalty <= 0) {
            throw json.invalid("repetition_penalty", "must be positive");
        }
        Integer maxNewTokens = json.optInteger("max_new_tokens");
        if (maxNewTokens != null && maxNewTokens < 1) {
            throw json.invalid("max_new_tokens", "must be at least 1");
        }
        Integer maxLength = json.optInteger("max_length");
        if (maxLength != null && maxLength < 1) {
            throw json.invalid("max_length", "must be at least 1");
        }
        Double minP = optDouble(json, "min_p");
        if (minP != null && !(minP >= 0 && minP <= 1)) {
            throw json.invalid("min_p", "must be in [0, 1]");
        }
        Integer numReturnSequences = json.optInteger("num_return_sequences");
        if (numReturnSequences != null && numReturnSequences < 1) {
            throw json.invalid("num_return_sequences", "must be at least 1");
        }
        return new GenerationDefaults(
                tokenId(json, "bos_token_id"),
                tokenIds(json, "eos_token_id"),
                tokenId(json, "pad_token_id"),
                json.has("do_sample") ? json.optBoolean("do_sample", false) : null,
                temperature,
                topK,
                topP,
                repetitionPenalty,
                maxNewTokens,
                maxLength,
                minP,
                numReturnSequences,
                stopStrings(json));
    }

    /**
     * The tokens that end a sequence: this file's {@code eos_token_id} when it names any, else
     * {@code fallback} (the model config's).
     *
     * @param fallback the ids to use when this file names none
     * @return the end-of-sequence ids
     */
    public List<Integer> eosTokenIdsOr(List<Integer> fallback) {
        return eosTokenIds.isEmpty() ? List.copyOf(fallback) : eosTokenIds;
    }

    private static List<String> stopStrings(ConfigJson json) throws InvalidCheckpointException {
        if (!json.has("stop_strings")) {
            return List.of();
        }
        JsonElement element = json.json().get("stop_strings");
        List<JsonElement> items = new ArrayList<>();
        if (element.isJsonArray()) {
            element.getAsJsonArray().forEach(items::add);
        } else {
            items.add(element);
        }
        List<String> out = new ArrayList<>();
        for (JsonElement item : items) {
            if (!item.isJsonPrimitive() || !item.getAsJsonPrimitive().isString() || item.getAsString().isEmpty()) {
                throw json.invalid("stop_strings", "expected a non-empty string or a list of them");
            }
            out.add(item.getAsString());
        }
        return out;
    }

    private static Double optDouble(ConfigJson json, String field)
            throws InvalidCheckpointException {
        return json.has(field) ? json.requireDouble(field) : null;
    }

    private static Integer tokenId(ConfigJson json, String field)
            throws InvalidCheckpointException {
        Integer id = json.optInteger(field);
        if (id != null && id < 0) {
            throw json.invalid(field, "token ids must not be negative");
        }
        return id;
    }

    private static List<Integer> tokenIds(ConfigJson json, String field)
            throws InvalidCheckpointException {
        List<Integer> ids = json.optIntList(field);
        for (int id : ids) {
            if (id < 0) {
                throw json.invalid(field, "token ids must not be negative");
            }
        }
        return ids;
    }
}
