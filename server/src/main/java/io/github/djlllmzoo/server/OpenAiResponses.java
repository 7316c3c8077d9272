package io.github.djlllmzoo.server;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.chat.ToolCall;
import io.github.djlllmzoo.chat.ToolCallSyntax;
import io.github.djlllmzoo.translators.Completion;
import io.github.djlllmzoo.translators.FinishReason;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.translators.TextTokenizer;
import io.github.djlllmzoo.translators.TokenLogprob;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** The JSON bodies the server answers with, in OpenAI's shapes. */
final class OpenAiResponses {

    /** Compact, nulls kept (OpenAI clients expect e.g. {@code "finish_reason": null}). */
    static final Gson GSON = new GsonBuilder().serializeNulls().disableHtmlEscaping().create();

    private OpenAiResponses() {}

    /**
     * @param reason why a sequence ended
     * @return OpenAI's {@code finish_reason}: EOS and stop strings are both {@code "stop"}
     */
    static String finishReason(FinishReason reason) {
        return reason == FinishReason.LENGTH ? "length" : "stop";
    }

    static JsonObject error(ApiException e) {
        JsonObject error = new JsonObject();
        error.addProperty("message", e.getMessage());
        error.addProperty("type", e.type());
        error.addProperty("param", e.param());
        error.addProperty("code", e.code());
        JsonObject body = new JsonObject();
        body.add("error", error);
        return body;
    }

    /** OpenAI's {@code finish_reason} of a reply that calls tools. */
    static final String TOOL_CALLS = "tool_calls";

    /**
     * A whole answer of either route.
     *
     * @param call the request, which says whether and how tool calls are read from the reply
     */
    static JsonObject answer(
            CompletionCall call,
            String id,
            long created,
            String model,
            GenerationResult result,
            TextTokenizer tokenizer) {
        Endpoint endpoint = call.endpoint();
        JsonObject body = header(endpoint.object(), id, created, model);
        JsonArray choices = new JsonArray();
        List<Completion> completions = result.completions();
        int completionTokens = 0;
        for (int n = 0; n < completions.size(); n++) {
            Completion c = completions.get(n);
            completionTokens += c.tokenIds().length;
            JsonObject choice = new JsonObject();
            choice.addProperty("index", n);
            String finishReason = finishReason(c.finishReason());
            if (endpoint == Endpoint.CHAT) {
                ToolCallSyntax.ParsedReply reply =
                        call.toolCalls() == null
                                ? new ToolCallSyntax.ParsedReply(c.text(), List.of())
                                : call.toolCalls().parse(c.text());
                List<ToolCall> calls = reply.calls();
                if (!call.parallelToolCalls() && calls.size() > 1) {
                    calls = calls.subList(0, 1);
                }
                choice.add("message", message(reply.content(), calls));
                if (!calls.isEmpty() && c.finishReason() != FinishReason.LENGTH) {
                    finishReason = TOOL_CALLS;
                }
                choice.add(
                        "logprobs",
                        c.logprobs() == null ? JsonNull.INSTANCE : chatLogprobs(c, tokenizer));
            } else {
                choice.addProperty("text", c.text());
                choice.add(
                        "logprobs",
                        c.logprobs() == null
                                ? JsonNull.INSTANCE
                                : completionLogprobs(c, tokenizer));
            }
            choice.addProperty("finish_reason", finishReason);
            choices.add(choice);
        }
        body.add("choices", choices);
        body.add("usage", usage(result.promptTokens(), completionTokens));
        return body;
    }

    /**
     * A streamed chunk of one choice.
     *
     * @param text new text, or {@code null} for none
     * @param role the role to announce (chat's first chunk), or {@code null}
     * @param finishReason the choice's {@code finish_reason}, or {@code null} while it goes on
     * @param withUsage whether the chunk carries {@code "usage": null} (when a usage chunk follows)
     */
    static JsonObject chunk(
            Endpoint endpoint,
            String id,
            long created,
            String model,
            int index,
            String text,
            String role,
            String finishReason,
            boolean withUsage) {
        JsonObject body = header(endpoint.chunkObject(), id, created, model);
        JsonObject choice = new JsonObject();
        choice.addProperty("index", index);
        if (endpoint == Endpoint.CHAT) {
            JsonObject delta = new JsonObject();
            if (role != null) {
                delta.addProperty("role", role);
            }
            if (text != null) {
                delta.addProperty("content", text);
            }
            choice.add("delta", delta);
        } else {
            choice.addProperty("text", text != null ? text : "");
        }
        choice.add("logprobs", JsonNull.INSTANCE);
        choice.addProperty("finish_reason", finishReason);
        JsonArray choices = new JsonArray();
        choices.add(choice);
        body.add("choices", choices);
        if (withUsage) {
            body.add("usage", JsonNull.INSTANCE);
        }
        return body;
    }

    /** The last chunk of a stream asked for with {@code stream_options.include_usage}. */
    static JsonObject usageChunk(
            Endpoint endpoint,
            String id,
            long created,
            String model,
            int promptTokens,
            int completionTokens) {
        JsonObject body = header(endpoint.chunkObject(), id, created, model);
        body.add("choices", new JsonArray());
        body.add("usage", usage(promptTokens, completionTokens));
        return body;
    }

    static JsonObject usage(int promptTokens, int completionTokens) {
        JsonObject usage = new JsonObject();
        usage.addProperty("prompt_tokens", promptTokens);
        usage.addProperty("completion_tokens", completionTokens);
        usage.addProperty("total_tokens", promptTokens + completionTokens);
        return usage;
    }

    static JsonObject model(String id, long created) {
        JsonObject model = new JsonObject();
        model.addProperty("id", id);
        model.addProperty("object", "model");
        model.addProperty("created", created);
        model.addProperty("owned_by", "djl-llm-zoo");
        return model;
    }

    static JsonObject models(List<String> ids, long created) {
        JsonObject body = new JsonObject();
        body.addProperty("object", "list");
        JsonArray data = new JsonArray();
        for (String id : ids) {
            data.add(model(id, created));
        }
        body.add("data", data);
        return body;
    }

    private static JsonObject header(String object, String id, long created, String model) {
        JsonObject body = new JsonObject();
        body.addProperty("id", id);
        body.addProperty("object", object);
        body.addProperty("created", created);
        body.addProperty("model", model);
        return body;
    }

    private static JsonObject message(String content, List<ToolCall> calls) {
        JsonObject message = new JsonObject();
        message.addProperty("role", "assistant");
        message.addProperty("content", content);
        if (!calls.isEmpty()) {
            JsonArray toolCalls = new JsonArray();
            for (ToolCall call : calls) {
                toolCalls.add(toolCall(call, null));
            }
            message.add("tool_calls", toolCalls);
        }
        return message;
    }

    /** {@code {"id", "type": "function", "function": {"name", "arguments"}}}, with its index in a chunk. */
    private static JsonObject toolCall(ToolCall call, Integer index) {
        JsonObject function = new JsonObject();
        function.addProperty("name", call.name());
        function.addProperty("arguments", call.arguments());
        JsonObject out = new JsonObject();
        if (index != null) {
            out.addProperty("index", index);
        }
        out.addProperty("id", call.id());
        out.addProperty("type", "function");
        out.add("function", function);
        return out;
    }

    /**
     * A streamed chat chunk of one choice carrying whole tool calls in {@code delta.tool_calls}.
     *
     * @param calls the calls
     * @param firstIndex the index of the first of them among the choice's calls
     */
    static JsonObject toolCallsChunk(
            String id,
            long created,
            String model,
            int index,
            List<ToolCall> calls,
            int firstIndex,
            boolean withUsage) {
        JsonObject body = chunk(Endpoint.CHAT, id, created, model, index, null, null, null, withUsage);
        JsonArray toolCalls = new JsonArray();
        for (int i = 0; i < calls.size(); i++) {
            toolCalls.add(toolCall(calls.get(i), firstIndex + i));
        }
        body.getAsJsonArray("choices")
                .get(0)
                .getAsJsonObject()
                .getAsJsonObject("delta")
                .add("tool_calls", toolCalls);
        return body;
    }

    /** Completions' legacy shape: tokens, their log-probabilities and text offsets. */
    private static JsonObject completionLogprobs(Completion c, TextTokenizer tokenizer) {
        JsonArray tokens = new JsonArray();
        JsonArray logprobs = new JsonArray();
        JsonArray offsets = new JsonArray();
        JsonArray top = new JsonArray();
        int offset = 0;
        for (int i = 0; i < c.tokenIds().length; i++) {
            String token = tokenizer.decode(new long[] {c.tokenIds()[i]});
            tokens.add(token);
            logprobs.add(c.logprobs()[i]);
            offsets.add(offset);
            offset += token.length();
            if (c.topLogprobs() != null) {
                // {text: logprob}, most likely first (tokens of the same text keep the first)
                JsonObject alternatives = new JsonObject();
                for (TokenLogprob t : c.topLogprobs().get(i)) {
                    String text = tokenizer.decode(new long[] {t.tokenId()});
                    if (!alternatives.has(text)) {
                        alternatives.addProperty(text, t.logprob());
                    }
                }
                top.add(alternatives);
            }
        }
        JsonObject out = new JsonObject();
        out.add("tokens", tokens);
        out.add("token_logprobs", logprobs);
        out.add("top_logprobs", c.topLogprobs() == null ? JsonNull.INSTANCE : top);
        out.add("text_offset", offsets);
        return out;
    }

    /** Chat's shape: one entry per token with its text, log-probability and UTF-8 bytes. */
    private static JsonObject chatLogprobs(Completion c, TextTokenizer tokenizer) {
        JsonArray content = new JsonArray();
        for (int i = 0; i < c.tokenIds().length; i++) {
            JsonObject entry = chatToken(c.tokenIds()[i], c.logprobs()[i], tokenizer);
            JsonArray top = new JsonArray();
            if (c.topLogprobs() != null) {
                for (TokenLogprob t : c.topLogprobs().get(i)) {
                    top.add(chatToken(t.tokenId(), t.logprob(), tokenizer));
                }
            }
            entry.add("top_logprobs", top);
            content.add(entry);
        }
        JsonObject out = new JsonObject();
        out.add("content", content);
        return out;
    }

    /** A token of chat's log-probabilities: its text, log-probability and UTF-8 bytes. */
    private static JsonObject chatToken(long id, float logprob, TextTokenizer tokenizer) {
        String token = tokenizer.decode(new long[] {id});
        JsonObject entry = new JsonObject();
        entry.addProperty("token", token);
        entry.addProperty("logprob", logprob);
        JsonArray bytes = new JsonArray();
        for (byte b : token.getBytes(StandardCharsets.UTF_8)) {
            bytes.add(b & 0xff);
        }
        entry.add("bytes", bytes);
        return entry;
    }
}
