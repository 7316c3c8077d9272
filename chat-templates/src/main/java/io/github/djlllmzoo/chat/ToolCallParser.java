package io.github.djlllmzoo.chat;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads one reply's tool calls as the text streams in: {@link #append} returns the text that is
 * certainly content and the calls completed so far; text that may still turn into a call (a
 * partial {@code <tool_call>}, a call whose JSON is still open) is held back until it is decided.
 * A call is given whole, id, name and arguments, as soon as its JSON closes. A call that does not
 * parse (no {@code name}, broken JSON) is given back as content, as written. Not thread-safe: one
 * parser per reply.
 */
public final class ToolCallParser {

    /**
     * What a piece of the reply decided.
     *
     * @param content text that is content (may be empty)
     * @param calls calls completed, in order
     * @param firstIndex the index in the reply of the first of {@code calls}
     */
    public record Delta(String content, List<ToolCall> calls, int firstIndex) {}

    private final ToolCallSyntax syntax;
    private final StringBuilder pending = new StringBuilder();
    private boolean inCall;
    /** Whether anything but whitespace was read: Llama 3's calls are the whole reply. */
    private boolean started;
    private int callCount;

    ToolCallParser(ToolCallSyntax syntax) {
        this.syntax = syntax;
    }

    /**
     * Reads the next piece of the reply.
     *
     * @param text the piece
     * @return what it decided
     */
    public Delta append(String text) {
        pending.append(text);
        return process(false);
    }

    /**
     * Ends the reply: held-back text is content, a call still open is a call if its JSON is whole
     * (a missing {@code </tool_call>}) or else content.
     *
     * @return what the end decided
     */
    public Delta finish() {
        return process(true);
    }

    /** @return how many calls were read so far */
    public int callCount() {
        return callCount;
    }

    private Delta process(boolean end) {
        StringBuilder content = new StringBuilder();
        List<ToolCall> calls = new ArrayList<>();
        int firstIndex = callCount;
        while (true) {
            if (!inCall) {
                if (!readContent(content, end)) {
                    break;
                }
            } else if (!readCall(content, calls, end)) {
                break;
            }
        }
        return new Delta(content.toString(), List.copyOf(calls), firstIndex);
    }

    /** Moves content out of {@code pending}; true when a call starts (more to read). */
    private boolean readContent(StringBuilder content, boolean end) {
        String text = pending.toString();
        if (syntax == ToolCallSyntax.LLAMA3_JSON) {
            return readLlamaStart(text, content, end);
        }
        String marker = syntax.startMarker();
        int at = text.indexOf(marker);
        if (at >= 0) {
            appendContent(content, text.substring(0, at));
            pending.delete(0, at + marker.length());
            inCall = true;
            return true;
        }
        int keep = end ? 0 : partialMarkerLength(text, marker);
        appendContent(content, text.substring(0, text.length() - keep));
        pending.delete(0, text.length() - keep);
        return false;
    }

    /** Content between calls that is only whitespace is the calls' separator, not content. */
    private void appendContent(StringBuilder content, String text) {
        if (callCount > 0 && text.isBlank()) {
            return;
        }
        content.append(text);
    }

    /** Llama 3 calls only at the start of the reply: {@code <|python_tag|>} or a JSON object. */
    private boolean readLlamaStart(String text, StringBuilder content, boolean end) {
        if (started) {
            // after a call, further calls follow a ';'
            String rest = text.stripLeading();
            if (callCount > 0 && rest.startsWith(";")) {
                pending.setLength(0);
                pending.append(rest.substring(1));
                inCall = true;
                return true;
            }
            if (callCount > 0 && (rest.isEmpty() && !end)) {
                return false;
            }
            appendContent(content, text);
            pending.setLength(0);
            return false;
        }
        String rest = text.stripLeading();
        String marker = syntax.startMarker();
        if (rest.startsWith(marker)) {
            started = true;
            pending.setLength(0);
            pending.append(rest.substring(marker.length()));
            inCall = true;
            return true;
        }
        if (rest.startsWith("{")) {
            started = true;
            inCall = true;
            return true;
        }
        if (!end && (rest.isEmpty() || marker.startsWith(rest))) {
            return false;
        }
        started = !rest.isEmpty();
        content.append(text);
        pending.setLength(0);
        return false;
    }

    /** Reads an open call; true when it closed (more to read). */
    private boolean readCall(StringBuilder content, List<ToolCall> calls, boolean end) {
        String text = pending.toString();
        String body;
        int consumed;
        if (syntax.endMarker() != null) {
            int at = text.indexOf(syntax.endMarker());
            if (at < 0 && !end) {
                return false;
            }
            body = at < 0 ? text : text.substring(0, at);
            consumed = at < 0 ? text.length() : at + syntax.endMarker().length();
        } else {
            int close = jsonEnd(text);
            if (close < 0 && !end) {
                return false;
            }
            body = close < 0 ? text : text.substring(0, close);
            consumed = close < 0 ? text.length() : close;
        }
        List<ToolCall> read = calls(body);
        if (read == null) {
            String raw =
                    syntax.endMarker() == null || consumed == body.length()
                            ? body
                            : body + syntax.endMarker();
            String marker = syntax == ToolCallSyntax.LLAMA3_JSON ? "" : syntax.startMarker();
            content.append(marker).append(raw);
        } else {
            calls.addAll(read);
            callCount += read.size();
        }
        pending.delete(0, consumed);
        inCall = false;
        return true;
    }

    /** The calls a JSON body holds, or null when it is not a call. */
    private List<ToolCall> calls(String body) {
        JsonElement json;
        try {
            json = JsonParser.parseString(body);
        } catch (JsonParseException e) {
            return null;
        }
        List<ToolCall> out = new ArrayList<>();
        if (json.isJsonArray()) {
            JsonArray items = json.getAsJsonArray();
            if (items.isEmpty()) {
                return null;
            }
            for (JsonElement item : items) {
                ToolCall call = call(item);
                if (call == null) {
                    return null;
                }
                out.add(call);
            }
            return out;
        }
        ToolCall call = call(json);
        return call == null ? null : List.of(call);
    }

    private ToolCall call(JsonElement json) {
        if (!json.isJsonObject()) {
            return null;
        }
        JsonObject object = json.getAsJsonObject();
        JsonElement name = object.get("name");
        if (name == null || !name.isJsonPrimitive() || !name.getAsJsonPrimitive().isString()) {
            return null;
        }
        JsonElement arguments = object.get(syntax.argumentsKey());
        if (arguments == null) {
            // either key, whichever the model wrote
            arguments = object.get("arguments");
            if (arguments == null) {
                arguments = object.get("parameters");
            }
        }
        String argumentsText;
        if (arguments == null || arguments.isJsonNull()) {
            argumentsText = "{}";
        } else if (arguments.isJsonPrimitive() && arguments.getAsJsonPrimitive().isString()) {
            argumentsText = arguments.getAsString();
        } else if (arguments.isJsonObject()) {
            argumentsText = arguments.toString();
        } else {
            return null;
        }
        return new ToolCall(syntax.newCallId(), name.getAsString(), argumentsText);
    }

    /** Where the JSON value at the start of {@code text} (after whitespace) ends, or -1. */
    private static int jsonEnd(String text) {
        int depth = 0;
        boolean inString = false;
        boolean begun = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '{' || c == '[') {
                depth++;
                begun = true;
            } else if (c == '}' || c == ']') {
                depth--;
                if (depth == 0) {
                    return i + 1;
                }
            } else if (!begun && !Character.isWhitespace(c)) {
                return i; // not a JSON object or array: the call ends here, unparsed
            }
        }
        return -1;
    }

    /** The length of the longest end of {@code text} that begins {@code marker}. */
    private static int partialMarkerLength(String text, String marker) {
        for (int n = Math.min(marker.length() - 1, text.length()); n > 0; n--) {
            if (text.endsWith(marker.substring(0, n))) {
                return n;
            }
        }
        return 0;
    }
}
