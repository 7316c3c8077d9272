package io.github.djlllmzoo.chat;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.constrained.OutputConstraint;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * How a model family writes tool calls in its reply, as its chat template teaches it:
 *
 * <ul>
 *   <li>{@link #HERMES} (Qwen2.5, Qwen3): one or more {@code <tool_call>\n{"name": ...,
 *       "arguments": {...}}\n</tool_call>} blocks, possibly after some text;
 *   <li>{@link #LLAMA3_JSON} (Llama 3.1, 3.2, 3.3): the whole reply is {@code {"name": ...,
 *       "parameters": {...}}}, optionally after {@code <|python_tag|>}, several separated by
 *       {@code ;};
 *   <li>{@link #MISTRAL} (Mistral v0.3): {@code [TOOL_CALLS] [{"name": ..., "arguments": {...}},
 *       ...]}.
 * </ul>
 *
 * {@link #forTemplate} recognizes the syntax from what the template renders; {@link #parser()}
 * reads a reply, streamed or whole.
 */
public enum ToolCallSyntax {
    /** {@code <tool_call>} JSON {@code </tool_call>} blocks (Hermes' format, which Qwen adopted). */
    HERMES("<tool_call>", "</tool_call>", "arguments"),
    /** A JSON object with {@code name} and {@code parameters} as the whole reply (Llama 3.1+). */
    LLAMA3_JSON("<|python_tag|>", null, "parameters"),
    /** {@code [TOOL_CALLS]} then a JSON array of calls (Mistral v0.3). */
    MISTRAL("[TOOL_CALLS]", null, "arguments");

    /** The parameters of a function that declares none: no arguments, {@code {}}. */
    public static final String NO_PARAMETERS =
            "{\"type\": \"object\", \"properties\": {}, \"additionalProperties\": false}";

    private static final String ALPHANUMERIC =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    /** Mistral's template refuses any other length. */
    private static final int MISTRAL_ID_LENGTH = 9;

    private static final int OPENAI_ID_LENGTH = 24;

    private static final SecureRandom RANDOM = new SecureRandom();

    private final String startMarker;
    private final String endMarker;
    private final String argumentsKey;

    ToolCallSyntax(String startMarker, String endMarker, String argumentsKey) {
        this.startMarker = startMarker;
        this.endMarker = endMarker;
        this.argumentsKey = argumentsKey;
    }

    /**
     * The syntax a chat template teaches its model, read from the template's text: {@code
     * <tool_call>} (Qwen), {@code [TOOL_CALLS]} (Mistral), or Llama 3's {@code "parameters"} JSON
     * under its {@code <|start_header_id|>} headers.
     *
     * @param template the model's chat template
     * @param family the model's family (e.g. {@code qwen2}), for the message when there is none
     * @return the syntax
     * @throws ToolsUnsupportedException naming the family when the template has no tool support
     */
    public static ToolCallSyntax forTemplate(ChatTemplate template, String family) {
        String source = template.source();
        if (source == null) {
            throw new ToolsUnsupportedException(
                    "the model (family '"
                            + family
                            + "') has no chat template, so it cannot be offered tools");
        }
        boolean readsTools = source.contains("tools");
        if (readsTools && source.contains("<tool_call>")) {
            return HERMES;
        }
        if (readsTools && source.contains("[TOOL_CALLS]")) {
            return MISTRAL;
        }
        if (readsTools
                && source.contains("<|start_header_id|>")
                && source.contains("\"parameters\"")) {
            return LLAMA3_JSON;
        }
        throw new ToolsUnsupportedException(
                    "the chat template of this model (family '"
                        + family
                        + "') has no tool support: it neither renders 'tools' nor a known"
                        + " tool-call syntax (Qwen <tool_call>, Llama 3 JSON, Mistral [TOOL_CALLS])");
    }

    /** @return the text that opens a call ({@code <tool_call>}, {@code [TOOL_CALLS]}, ...) */
    public String startMarker() {
        return startMarker;
    }

    /** @return the text that closes a call, or null when the JSON's own end closes it */
    public String endMarker() {
        return endMarker;
    }

    /** @return the key of a call's arguments in its JSON ({@code arguments}, {@code parameters}) */
    public String argumentsKey() {
        return argumentsKey;
    }

    /** @return whether one reply may hold several calls in this syntax */
    public boolean allowsParallelCalls() {
        // Llama 3's templates refuse an assistant turn of several calls
        return this != LLAMA3_JSON;
    }

    /**
     * A new call id in the form the family's template accepts back: nine letters and digits for
     * Mistral, OpenAI's {@code call_...} otherwise.
     *
     * @return the id
     */
    public String newCallId() {
        if (this == MISTRAL) {
            return randomAlphanumeric(MISTRAL_ID_LENGTH);
        }
        return "call_" + randomAlphanumeric(OPENAI_ID_LENGTH);
    }

    private static String randomAlphanumeric(int length) {
        StringBuilder id = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            id.append(ALPHANUMERIC.charAt(RANDOM.nextInt(ALPHANUMERIC.length())));
        }
        return id.toString();
    }

    /**
     * What a reply that must call tools may be: this syntax around calls whose {@code name} is one
     * of the functions and whose arguments are valid against that function's parameters (Qwen's
     * {@code <tool_call>} blocks, Mistral's {@code [TOOL_CALLS]} list, Llama 3's bare JSON), at
     * least one call, several only when {@code parallel} and the family writes several.
     *
     * @param parameters each function's parameters schema (JSON text), by name, in order
     * @param parallel whether several calls may follow one another
     * @return the constraint
     */
    public OutputConstraint callConstraint(Map<String, String> parameters, boolean parallel) {
        JsonArray options = new JsonArray();
        for (Map.Entry<String, String> e : parameters.entrySet()) {
            JsonObject name = new JsonObject();
            name.addProperty("const", e.getKey());
            JsonObject properties = new JsonObject();
            properties.add("name", name);
            properties.add(argumentsKey, JsonParser.parseString(e.getValue()));
            JsonArray required = new JsonArray();
            required.add("name");
            required.add(argumentsKey);
            JsonObject call = new JsonObject();
            call.addProperty("type", "object");
            call.add("properties", properties);
            call.add("required", required);
            call.addProperty("additionalProperties", false);
            options.add(call);
        }
        JsonObject schema;
        if (options.size() == 1) {
            schema = options.get(0).getAsJsonObject();
        } else {
            schema = new JsonObject();
            schema.add("anyOf", options);
        }
        OutputConstraint call = OutputConstraint.jsonSchema(schema.toString());
        int most = parallel && allowsParallelCalls() ? Integer.MAX_VALUE : 1;
        return switch (this) {
            case HERMES -> OutputConstraint.repeat(
                    OutputConstraint.sequence(
                            OutputConstraint.literal(startMarker + "\n"),
                            call,
                            OutputConstraint.literal("\n" + endMarker)),
                    "\n",
                    1,
                    most);
            case MISTRAL -> OutputConstraint.sequence(
                    OutputConstraint.literal(startMarker + " ["),
                    OutputConstraint.repeat(call, ", ", 1, most),
                    OutputConstraint.literal("]"));
            case LLAMA3_JSON -> call;
        };
    }

    /** @return a parser for one reply, fed as it streams */
    public ToolCallParser parser() {
        return new ToolCallParser(this);
    }

    /**
     * Reads a whole reply.
     *
     * @param text the model's reply
     * @return its text besides the calls and the calls; with calls, the text is stripped (null
     *     when only whitespace is left), without any it is the reply as written
     */
    public ParsedReply parse(String text) {
        ToolCallParser parser = parser();
        ToolCallParser.Delta first = parser.append(text);
        ToolCallParser.Delta last = parser.finish();
        String content = first.content() + last.content();
        List<ToolCall> calls = new ArrayList<>(first.calls());
        calls.addAll(last.calls());
        if (calls.isEmpty()) {
            return new ParsedReply(text, List.of());
        }
        return new ParsedReply(content.isBlank() ? null : content.strip(), List.copyOf(calls));
    }

    /**
     * A reply read: its text and its calls.
     *
     * @param content the text besides the calls, or null
     * @param calls the calls, in order (empty when the model called nothing)
     */
    public record ParsedReply(String content, List<ToolCall> calls) {}

    @Override
    public String toString() {
        return name().toLowerCase(Locale.ROOT);
    }
}
