package io.github.djlllmzoo.server;

import static io.github.djlllmzoo.server.JsonFields.isString;
import static io.github.djlllmzoo.server.JsonFields.string;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.chat.ChatMessage;
import io.github.djlllmzoo.chat.ToolCall;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads OpenAI's {@code messages}: roles {@code system}, {@code developer} (read as {@code
 * system}, which templates know), {@code user}, {@code assistant} (text, or {@code tool_calls}
 * with a {@code null} content) and {@code tool} (a result with the {@code tool_call_id} it
 * answers). Content is a string or a list of text parts. Anything else is an {@link ApiException}
 * naming the field, e.g. {@code messages[2].tool_calls[0].function.name}.
 */
final class ChatMessagesJson {

    private static final List<String> ROLES =
            List.of("system", "developer", "user", "assistant", "tool");

    private ChatMessagesJson() {}

    static List<ChatMessage> read(JsonObject body) {
        JsonElement messages = body.get("messages");
        if (messages == null || !messages.isJsonArray() || messages.getAsJsonArray().size() == 0) {
            throw ApiException.invalid(
                    "messages", "messages must be a non-empty list of {role, content}");
        }
        List<ChatMessage> out = new ArrayList<>();
        JsonArray array = messages.getAsJsonArray();
        for (int i = 0; i < array.size(); i++) {
            String param = "messages[" + i + "]";
            if (!array.get(i).isJsonObject()) {
                throw ApiException.invalid(param, "expected an object {role, content}");
            }
            out.add(message(array.get(i).getAsJsonObject(), param));
        }
        return out;
    }

    private static ChatMessage message(JsonObject message, String param) {
        String role = role(message, param + ".role");
        JsonElement calls = message.get("tool_calls");
        if ("assistant".equals(role) && calls != null && !calls.isJsonNull()) {
            JsonElement content = message.get("content");
            String text =
                    content == null || content.isJsonNull()
                            ? null
                            : content(content, param + ".content");
            return ChatMessage.assistantCalling(text, toolCalls(calls, param + ".tool_calls"));
        }
        if ("tool".equals(role)) {
            String id = string(message, "tool_call_id", param + ".tool_call_id");
            if (id == null) {
                throw ApiException.invalid(
                        param + ".tool_call_id",
                        "a tool message needs the tool_call_id of the call it answers");
            }
            return ChatMessage.toolResult(
                    id, required(message.get("content"), param + ".content"));
        }
        JsonElement content = message.get("content");
        if ((content == null || content.isJsonNull()) && "assistant".equals(role)) {
            return new ChatMessage(role, "");
        }
        return new ChatMessage(role, required(content, param + ".content"));
    }

    /** A message's role, {@code developer} read as {@code system}. */
    private static String role(JsonObject message, String param) {
        String role = string(message, "role", param);
        if (role == null) {
            throw ApiException.invalid(param, "role is required");
        }
        if ("function".equals(role)) {
            throw ApiException.invalid(
                    param, "'function' messages (OpenAI's deprecated form) are not supported; use 'tool'");
        }
        if (!ROLES.contains(role)) {
            throw ApiException.invalid(
                    param,
                    "unknown role '" + role + "'; expected one of " + String.join(", ", ROLES));
        }
        return "developer".equals(role) ? "system" : role;
    }

    private static List<ToolCall> toolCalls(JsonElement calls, String param) {
        if (!calls.isJsonArray() || calls.getAsJsonArray().isEmpty()) {
            throw ApiException.invalid(param, "expected a non-empty list of tool calls");
        }
        List<ToolCall> out = new ArrayList<>();
        JsonArray array = calls.getAsJsonArray();
        for (int i = 0; i < array.size(); i++) {
            String at = param + "[" + i + "]";
            if (!array.get(i).isJsonObject()) {
                throw ApiException.invalid(at, "expected {id, type, function: {name, arguments}}");
            }
            JsonObject call = array.get(i).getAsJsonObject();
            String type = string(call, "type", at + ".type");
            if (type != null && !"function".equals(type)) {
                throw ApiException.invalid(
                        at + ".type", "only 'function' tool calls exist, got '" + type + "'");
            }
            String id = string(call, "id", at + ".id");
            JsonElement function = call.get("function");
            if (id == null || function == null || !function.isJsonObject()) {
                throw ApiException.invalid(at, "a tool call needs an id and a function {name, arguments}");
            }
            String name = string(function.getAsJsonObject(), "name", at + ".function.name");
            if (name == null) {
                throw ApiException.invalid(at + ".function.name", "the function's name is required");
            }
            JsonElement arguments = function.getAsJsonObject().get("arguments");
            String text;
            if (arguments == null || arguments.isJsonNull()) {
                text = "{}";
            } else if (isString(arguments)) {
                text = arguments.getAsString();
            } else if (arguments.isJsonObject()) {
                text = arguments.toString();
            } else {
                throw ApiException.invalid(
                        at + ".function.arguments", "expected the arguments as a JSON string");
            }
            out.add(new ToolCall(id, name, text));
        }
        return out;
    }

    private static String required(JsonElement content, String param) {
        if (content == null || content.isJsonNull()) {
            throw ApiException.invalid(param, "content is required");
        }
        return content(content, param);
    }

    /** A message's content: a string, or a list of text parts joined by newlines. */
    private static String content(JsonElement content, String param) {
        if (isString(content)) {
            return content.getAsString();
        }
        if (!content.isJsonArray()) {
            throw ApiException.invalid(param, "expected a string or a list of text parts");
        }
        List<String> texts = new ArrayList<>();
        for (JsonElement part : content.getAsJsonArray()) {
            if (!part.isJsonObject()
                    || !"text".equals(string(part.getAsJsonObject(), "type", param))
                    || !isString(part.getAsJsonObject().get("text"))) {
                throw ApiException.invalid(
                        param, "only text parts {\"type\": \"text\", \"text\": ...} are supported");
            }
            texts.add(part.getAsJsonObject().get("text").getAsString());
        }
        return String.join("\n", texts);
    }
}
