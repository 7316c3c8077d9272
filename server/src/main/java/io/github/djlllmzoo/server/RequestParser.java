package io.github.djlllmzoo.server;

import static io.github.djlllmzoo.server.JsonFields.bool;
import static io.github.djlllmzoo.server.JsonFields.integer;
import static io.github.djlllmzoo.server.JsonFields.isString;
import static io.github.djlllmzoo.server.JsonFields.longValue;
import static io.github.djlllmzoo.server.JsonFields.number;
import static io.github.djlllmzoo.server.JsonFields.present;
import static io.github.djlllmzoo.server.JsonFields.string;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.chat.ChatMessage;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.chat.ChatTemplateException;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.LogitAdjustments;
import io.github.djlllmzoo.translators.TextTokenizer;
import java.io.IOException;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the JSON body of an OpenAI completions or chat completions request into a {@link
 * CompletionCall}. Anything malformed or unsupported is an {@link ApiException} naming the field.
 *
 * <p>Fields a request leaves out take OpenAI's defaults: {@code temperature} 1 (sampling; 0 is
 * greedy), {@code top_p} 1, {@code n} 1, {@code max_tokens} 16 for completions and the rest of the
 * context window for chat. The checkpoint's defaults contribute the EOS tokens, {@code
 * repetition_penalty} and {@code min_p}. OpenAI's {@code logit_bias}, {@code presence_penalty} and
 * {@code frequency_penalty} shape the logits ({@link LogitAdjustments}); {@code logprobs} (up to 5
 * alternatives in completions) and {@code top_logprobs} (up to 20 in chat) give log-probabilities.
 * Extensions: {@code top_k}, {@code min_p}, {@code repetition_penalty}, {@code ignore_eos}.
 *
 * <p>OpenAI's limits hold: bodies are strict JSON, at most 4 stop strings, {@code stream_options}
 * only with {@code stream}. Chat messages are read by {@link ChatMessagesJson}; {@code tools},
 * {@code tool_choice}, {@code parallel_tool_calls} and {@code response_format} by {@link
 * ChatOutputParser}.
 */
final class RequestParser {

    /** OpenAI's {@code max_tokens} default for {@code /v1/completions}. */
    static final int DEFAULT_COMPLETION_TOKENS = 16;

    /** OpenAI's bound on {@code logprobs} of {@code /v1/completions}. */
    static final int MAX_COMPLETION_LOGPROBS = 5;

    /** Most stop strings per request, as OpenAI allows. */
    static final int MAX_STOP_STRINGS = 4;

    /** Gson's description of a syntax error: what, where, then its JSON path and a link. */
    private static final Pattern JSON_ERROR =
            Pattern.compile("(.+?) at line (\\d+) column (\\d+)( path .*)?");

    private final List<String> modelIds;
    private final TextTokenizer tokenizer;
    private final ChatTemplate template;
    private final DecoderConfig model;
    private final GenerationConfig defaults;
    private final int maxSequences;
    private final ChatOutputParser outputs;

    /**
     * @param modelIds the names clients may ask for: the model's, then its adapters'
     * @param tokenizer the model's tokenizer
     * @param template renders conversations
     * @param model the model config (vocabulary, context window)
     * @param defaults the checkpoint's generation defaults
     * @param maxSequences the most sequences ({@code n}) per request
     */
    RequestParser(
            List<String> modelIds,
            TextTokenizer tokenizer,
            ChatTemplate template,
            DecoderConfig model,
            GenerationConfig defaults,
            int maxSequences) {
        this.modelIds = List.copyOf(modelIds);
        this.tokenizer = tokenizer;
        this.template = template;
        this.model = model;
        this.defaults = defaults;
        this.maxSequences = maxSequences;
        this.outputs = new ChatOutputParser(template, model.modelType(), tokenizer);
    }

    /**
     * Parses a request body, which must be one JSON object in strict JSON (RFC 8259), as OpenAI
     * reads it.
     *
     * @param text the body
     * @return the object
     * @throws ApiException if the body is not valid JSON (saying what and where, in words) or not
     *     an object
     */
    static JsonObject body(String text) {
        JsonElement body;
        JsonReader reader = new JsonReader(new StringReader(text));
        reader.setStrictness(Strictness.STRICT);
        try {
            body = JsonParser.parseReader(reader);
            reader.peek(); // fails on anything but white space after the value
        } catch (IOException | JsonParseException e) {
            throw ApiException.invalid(
                    null, "the request body is not valid JSON: " + syntaxError(e));
        }
        if (body == null || !body.isJsonObject()) {
            throw ApiException.invalid(null, "the request body must be a JSON object");
        }
        return body.getAsJsonObject();
    }

    /** Gson's message of the innermost cause, without exception names, JSON path or link. */
    private static String syntaxError(Exception e) {
        Throwable cause = e;
        while (cause.getCause() != null) {
            cause = cause.getCause();
        }
        String message = cause.getMessage() == null ? "" : cause.getMessage().lines().findFirst().orElse("");
        Matcher m = JSON_ERROR.matcher(message);
        if (!m.matches()) {
            return "malformed JSON";
        }
        String what = m.group(1);
        if (what.startsWith("End of input")) {
            what = "unexpected end of input";
        } else if (what.contains("setStrictness")) {
            // "Use JsonReader.setStrictness(Strictness.LENIENT) to accept malformed JSON"
            what = "unexpected text";
        } else {
            what = Character.toLowerCase(what.charAt(0)) + what.substring(1);
        }
        return what + " at line " + m.group(2) + " column " + m.group(3);
    }

    /**
     * @param body a {@code /v1/completions} request
     * @return the call
     * @throws ApiException if the request is malformed or unsupported
     */
    CompletionCall completion(JsonObject body) {
        checkModel(body);
        if (bool(body, "echo", false)) {
            throw ApiException.invalid("echo", "echo is not supported");
        }
        if (present(body, "suffix")) {
            throw ApiException.invalid("suffix", "suffix (insertion) is not supported");
        }
        Integer bestOf = integer(body, "best_of", 1, Integer.MAX_VALUE);
        if (bestOf != null && bestOf > 1) {
            throw ApiException.invalid("best_of", "best_of is not supported; use n");
        }
        long[] prompt = prompt(body);
        Integer logprobs = integer(body, "logprobs", 0, MAX_COMPLETION_LOGPROBS);
        Integer maxTokens = integer(body, "max_tokens", 1, Integer.MAX_VALUE);
        return call(
                Endpoint.COMPLETIONS,
                body,
                prompt,
                "prompt",
                maxTokens != null ? maxTokens : DEFAULT_COMPLETION_TOKENS,
                logprobs != null,
                logprobs != null ? logprobs : 0,
                ChatOutput.TEXT);
    }

    /**
     * @param body a {@code /v1/chat/completions} request
     * @return the call, its prompt the conversation rendered with the chat template
     * @throws ApiException if the request is malformed or unsupported
     */
    CompletionCall chat(JsonObject body) {
        checkModel(body);
        List<ChatMessage> messages = ChatMessagesJson.read(body);
        ChatOutput output = outputs.read(body);
        boolean logprobs = bool(body, "logprobs", false);
        Integer topLogprobs =
                integer(body, "top_logprobs", 0, GenerationConfig.MAX_TOP_LOGPROBS);
        if (topLogprobs != null && !logprobs) {
            throw ApiException.invalid(
                    "top_logprobs", "top_logprobs needs \"logprobs\": true");
        }
        String rendered;
        try {
            rendered = template.render(messages, output.tools(), true, Map.of());
        } catch (ChatTemplateException e) {
            throw ApiException.invalid(e.param(), e.getMessage());
        }
        long[] prompt = template.encode(rendered, tokenizer);
        Integer maxTokens = integer(body, "max_completion_tokens", 1, Integer.MAX_VALUE);
        if (maxTokens == null) {
            maxTokens = integer(body, "max_tokens", 1, Integer.MAX_VALUE);
        }
        int budget =
                maxTokens != null ? maxTokens : Math.max(1, model.maxPositions() - prompt.length);
        return call(
                Endpoint.CHAT,
                body,
                prompt,
                "messages",
                budget,
                logprobs,
                topLogprobs != null ? topLogprobs : 0,
                output);
    }

    private CompletionCall call(
            Endpoint endpoint,
            JsonObject body,
            long[] prompt,
            String promptField,
            int maxTokens,
            boolean logprobs,
            int topLogprobs,
            ChatOutput output) {
        validatePrompt(prompt, promptField);
        GenerationConfig config =
                config(body, maxTokens, logprobs, topLogprobs)
                        .toBuilder()
                        .optConstraint(output.constraint())
                        .build();
        boolean stream = bool(body, "stream", false);
        if (stream && logprobs) {
            throw ApiException.invalid(
                    "logprobs", "logprobs are not supported with stream; drop one of them");
        }
        boolean includeUsage = false;
        JsonElement options = body.get("stream_options");
        if (options != null && !options.isJsonNull()) {
            if (!stream) {
                throw ApiException.invalid(
                        "stream_options", "stream_options is only allowed with \"stream\": true");
            }
            if (!options.isJsonObject()) {
                throw ApiException.invalid("stream_options", "expected an object");
            }
            includeUsage = bool(options.getAsJsonObject(), "include_usage", false);
        }
        return new CompletionCall(
                endpoint,
                prompt,
                config,
                stream,
                includeUsage,
                output.toolCalls(),
                output.parallelToolCalls());
    }

    private GenerationConfig config(
            JsonObject body, int maxTokens, boolean logprobs, int topLogprobs) {
        Double temperature = number(body, "temperature", 0, 2);
        Double topP = number(body, "top_p", 0, 1);
        Integer topK = integer(body, "top_k", -1, Integer.MAX_VALUE);
        Double minP = number(body, "min_p", 0, 1);
        Double repetitionPenalty = number(body, "repetition_penalty", 0, Double.MAX_VALUE);
        Integer n = integer(body, "n", 1, maxSequences);
        double t = temperature != null ? temperature : 1.0;
        GenerationConfig.Builder b =
                defaults.toBuilder()
                        .maxNewTokens(maxTokens)
                        .doSample(t > 0)
                        .temperature((float) t)
                        .topP(topP != null ? topP.floatValue() : 1f)
                        .topK(topK != null && topK > 0 ? topK : 0)
                        .seed(longValue(body, "seed"))
                        .stopStrings(stop(body))
                        .numReturnSequences(n != null ? n : 1)
                        .logitAdjustments(logitAdjustments(body))
                        .returnLogprobs(logprobs)
                        .topLogprobs(topLogprobs);
        if (minP != null) {
            b.minP(minP.floatValue());
        }
        if (repetitionPenalty != null) {
            b.repetitionPenalty(repetitionPenalty.floatValue());
        }
        if (bool(body, "ignore_eos", false)) {
            b.eosTokenIds(List.of());
        }
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            throw ApiException.invalid(null, e.getMessage());
        }
    }

    private void checkModel(JsonObject body) {
        String requested = string(body, "model");
        if (requested != null && !modelIds.contains(requested)) {
            throw new ApiException(
                    404,
                    "invalid_request_error",
                    "model",
                    "model_not_found",
                    "The model '"
                            + requested
                            + "' does not exist; this server serves '"
                            + String.join("', '", modelIds)
                            + "'");
        }
    }

    /** OpenAI's {@code logit_bias}, {@code presence_penalty} and {@code frequency_penalty}. */
    private LogitAdjustments logitAdjustments(JsonObject body) {
        Double presence =
                number(body, "presence_penalty", -LogitAdjustments.MAX_PENALTY, LogitAdjustments.MAX_PENALTY);
        Double frequency =
                number(body, "frequency_penalty", -LogitAdjustments.MAX_PENALTY, LogitAdjustments.MAX_PENALTY);
        return new LogitAdjustments(
                logitBias(body),
                presence != null ? presence.floatValue() : 0f,
                frequency != null ? frequency.floatValue() : 0f);
    }

    /** {@code {"token id": bias}}, ids in the vocabulary and biases in [-100, 100]. */
    private Map<Integer, Float> logitBias(JsonObject body) {
        JsonElement bias = body.get("logit_bias");
        if (bias == null || bias.isJsonNull()) {
            return Map.of();
        }
        if (!bias.isJsonObject()) {
            throw ApiException.invalid(
                    "logit_bias", "expected an object mapping token ids to biases, got " + bias);
        }
        Map<Integer, Float> out = new HashMap<>();
        for (Map.Entry<String, JsonElement> e : bias.getAsJsonObject().entrySet()) {
            int id;
            try {
                id = Integer.parseInt(e.getKey());
            } catch (NumberFormatException notAnId) {
                throw ApiException.invalid(
                        "logit_bias", "keys are token ids, got '" + e.getKey() + "'");
            }
            if (id < 0 || id >= model.vocabSize()) {
                throw ApiException.invalid(
                        "logit_bias",
                        "token id "
                                + id
                                + " is outside the model's vocabulary of "
                                + model.vocabSize());
            }
            JsonElement value = e.getValue();
            if (!value.isJsonPrimitive()
                    || !value.getAsJsonPrimitive().isNumber()
                    || !(Math.abs(value.getAsDouble()) <= LogitAdjustments.MAX_BIAS)) {
                throw ApiException.invalid(
                        "logit_bias",
                        "the bias of token " + id + " must be a number in [-100, 100], got " + value);
            }
            out.put(id, value.getAsFloat());
        }
        return out;
    }

    private long[] prompt(JsonObject body) {
        JsonElement prompt = body.get("prompt");
        if (prompt == null || prompt.isJsonNull()) {
            throw ApiException.invalid("prompt", "prompt is required");
        }
        if (isString(prompt)) {
            return tokenizer.encode(prompt.getAsString());
        }
        if (!prompt.isJsonArray() || prompt.getAsJsonArray().size() == 0) {
            throw ApiException.invalid(
                    "prompt", "expected a string, a list of one string or a list of token ids");
        }
        JsonArray array = prompt.getAsJsonArray();
        JsonElement first = array.get(0);
        if (array.size() == 1 && isString(first)) {
            return tokenizer.encode(first.getAsString());
        }
        if (array.size() == 1 && first.isJsonArray()) {
            return tokenIds(first.getAsJsonArray());
        }
        if (isString(first) || first.isJsonArray()) {
            throw ApiException.invalid(
                    "prompt",
                    "one prompt per request is supported (use n for several completions of it)");
        }
        return tokenIds(array);
    }

    private static long[] tokenIds(JsonArray array) {
        long[] ids = new long[array.size()];
        for (int i = 0; i < ids.length; i++) {
            JsonElement id = array.get(i);
            if (!id.isJsonPrimitive() || !id.getAsJsonPrimitive().isNumber()) {
                throw ApiException.invalid("prompt", "token ids must be integers, got " + id);
            }
            try {
                ids[i] = id.getAsBigDecimal().longValueExact();
            } catch (ArithmeticException e) {
                throw ApiException.invalid("prompt", "token ids must be integers, got " + id);
            }
        }
        return ids;
    }

    private void validatePrompt(long[] prompt, String field) {
        if (prompt.length == 0) {
            throw ApiException.invalid(field, "the prompt has no tokens");
        }
        for (long id : prompt) {
            if (id < 0 || id >= model.vocabSize()) {
                throw ApiException.invalid(
                        field,
                        "token id "
                                + id
                                + " is outside the model's vocabulary of "
                                + model.vocabSize());
            }
        }
        if (prompt.length >= model.maxPositions()) {
            throw new ApiException(
                    400,
                    "invalid_request_error",
                    field,
                    "context_length_exceeded",
                    "This model's maximum context length is "
                            + model.maxPositions()
                            + " tokens, but the prompt has "
                            + prompt.length
                            + " tokens, which leaves no room to generate.");
        }
    }

    private static List<String> stop(JsonObject body) {
        JsonElement stop = body.get("stop");
        if (stop == null || stop.isJsonNull()) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        if (isString(stop)) {
            out.add(stop.getAsString());
        } else if (stop.isJsonArray()) {
            for (JsonElement item : stop.getAsJsonArray()) {
                if (!isString(item)) {
                    throw ApiException.invalid("stop", "expected a string or a list of strings");
                }
                out.add(item.getAsString());
            }
        } else {
            throw ApiException.invalid("stop", "expected a string or a list of strings");
        }
        if (out.size() > MAX_STOP_STRINGS) {
            throw ApiException.invalid(
                    "stop", "at most " + MAX_STOP_STRINGS + " stop strings, got " + out.size());
        }
        if (out.contains("")) {
            throw ApiException.invalid("stop", "stop strings must not be empty");
        }
        return out;
    }
}
