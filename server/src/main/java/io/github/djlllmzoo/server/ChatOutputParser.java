package io.github.djlllmzoo.server;

import static io.github.djlllmzoo.server.JsonFields.bool;
import static io.github.djlllmzoo.server.JsonFields.isString;
import static io.github.djlllmzoo.server.JsonFields.present;
import static io.github.djlllmzoo.server.JsonFields.string;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.chat.ToolCallSyntax;
import io.github.djlllmzoo.chat.ToolsUnsupportedException;
import io.github.djlllmzoo.constrained.InvalidConstraintException;
import io.github.djlllmzoo.constrained.OutputConstraint;
import io.github.djlllmzoo.translators.TextTokenizer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Reads a chat request's {@code tools}, {@code tool_choice}, {@code parallel_tool_calls} and
 * {@code response_format} into a {@link ChatOutput}:
 *
 * <ul>
 *   <li>tools are rendered through the chat template and, with {@code tool_choice} {@code auto}
 *       (the default), the reply's calls are read in the family's {@link ToolCallSyntax}; a
 *       template without tool support is a 400 naming the family;
 *   <li>{@code required} and a named function constrain decoding to the family's call syntax
 *       with the functions' parameter schemas, so a call always parses (several calls when {@code
 *       parallel_tool_calls} allows and the family can write them, one otherwise);
 *   <li>{@code response_format} {@code json_object} and {@code json_schema} constrain decoding to
 *       any JSON object or to the schema (except where a required or named tool choice makes the
 *       reply a call, which has no text for it to shape); with tools and {@code auto}, to either a
 *       call or the formatted answer.
 * </ul>
 *
 * Constraints are compiled here, against the tokenizer's vocabulary (and kept there for the
 * generation), so an unsupported schema keyword is a 400 naming the keyword and its path.
 */
final class ChatOutputParser {

    /** OpenAI's rule for function names. */
    private static final Pattern FUNCTION_NAME = Pattern.compile("[A-Za-z0-9_-]{1,64}");

    private final ChatTemplate template;
    private final String family;
    private final TextTokenizer tokenizer;

    /**
     * @param template the model's chat template (tells the tool-call syntax)
     * @param family the model's family, for messages
     * @param tokenizer compiles the constraints
     */
    ChatOutputParser(ChatTemplate template, String family, TextTokenizer tokenizer) {
        this.template = template;
        this.family = family;
        this.tokenizer = tokenizer;
    }

    ChatOutput read(JsonObject body) {
        if (present(body, "functions") || present(body, "function_call")) {
            throw ApiException.invalid(
                    present(body, "functions") ? "functions" : "function_call",
                    "OpenAI's deprecated functions are not supported; use tools and tool_choice");
        }
        OutputConstraint format = responseFormat(body);
        Map<String, JsonObject> functions = functions(body);
        JsonElement choice = body.get("tool_choice");
        if (functions.isEmpty()) {
            if (choice != null && !choice.isJsonNull()) {
                throw ApiException.invalid("tool_choice", "tool_choice needs tools");
            }
            return format == null ? ChatOutput.TEXT : new ChatOutput(List.of(), null, false, format);
        }
        List<JsonObject> tools = body.getAsJsonArray("tools").asList().stream()
                .map(JsonElement::getAsJsonObject)
                .toList();
        ToolCallSyntax syntax;
        try {
            syntax = ToolCallSyntax.forTemplate(template, family);
        } catch (ToolsUnsupportedException e) {
            throw ApiException.invalid(e.param(), e.getMessage());
        }
        boolean parallel = bool(body, "parallel_tool_calls", true) && syntax.allowsParallelCalls();
        String mode = "auto";
        String named = null;
        if (choice != null && !choice.isJsonNull()) {
            if (isString(choice)) {
                mode = choice.getAsString();
                if (!List.of("auto", "none", "required").contains(mode)) {
                    throw ApiException.invalid(
                            "tool_choice",
                            "expected 'auto', 'none', 'required' or {\"type\": \"function\","
                                    + " \"function\": {\"name\": ...}}, got '"
                                    + mode
                                    + "'");
                }
            } else {
                named = namedFunction(choice, functions);
                mode = "named";
            }
        }
        if (mode.equals("none")) {
            return new ChatOutput(tools, null, false, format);
        }
        if (mode.equals("auto")) {
            if (format == null) {
                return new ChatOutput(tools, syntax, parallel, null);
            }
            // the model may call a tool or answer, and an answer must have the requested format:
            // either a call in the family's syntax or the formatted reply, nothing else
            OutputConstraint callOrAnswer = OutputConstraint.anyOf(calls(syntax, functions, parallel), format);
            return new ChatOutput(tools, syntax, parallel, compiled(callOrAnswer, "response_format"));
        }
        // the reply is a call, so no text answer is left for a response_format to shape (OpenAI
        // takes both, and LangChain4j's AiServices sends its format with every turn)
        Map<String, JsonObject> callable =
                named == null ? functions : Map.of(named, functions.get(named));
        OutputConstraint calls = calls(syntax, callable, named == null && parallel);
        return new ChatOutput(tools, syntax, named == null && parallel, compiled(calls, "tools"));
    }

    /** The functions of {@code tools} by name, their parameter schemas checked. */
    private Map<String, JsonObject> functions(JsonObject body) {
        JsonElement tools = body.get("tools");
        Map<String, JsonObject> out = new LinkedHashMap<>();
        if (tools == null || tools.isJsonNull()) {
            return out;
        }
        if (!tools.isJsonArray()) {
            throw ApiException.invalid("tools", "expected a list of {\"type\": \"function\", ...}");
        }
        JsonArray array = tools.getAsJsonArray();
        for (int i = 0; i < array.size(); i++) {
            String param = "tools[" + i + "]";
            JsonElement tool = array.get(i);
            if (!tool.isJsonObject()
                    || !"function".equals(string(tool.getAsJsonObject(), "type", param + ".type"))
                    || !tool.getAsJsonObject().has("function")
                    || !tool.getAsJsonObject().get("function").isJsonObject()) {
                throw ApiException.invalid(
                        param, "expected {\"type\": \"function\", \"function\": {\"name\", ...}}");
            }
            JsonObject function = tool.getAsJsonObject().getAsJsonObject("function");
            String name = string(function, "name", param + ".function.name");
            if (name == null || !FUNCTION_NAME.matcher(name).matches()) {
                throw ApiException.invalid(
                        param + ".function.name",
                        "a function name is 1 to 64 letters, digits, '_' or '-', got "
                                + (name == null ? "none" : "'" + name + "'"));
            }
            if (out.containsKey(name)) {
                throw ApiException.invalid(
                        param + ".function.name", "the function '" + name + "' is given twice");
            }
            JsonElement parameters = function.get("parameters");
            if (parameters != null && !parameters.isJsonNull() && !parameters.isJsonObject()) {
                throw ApiException.invalid(
                        param + ".function.parameters", "expected a JSON Schema object");
            }
            out.put(name, function);
        }
        return out;
    }

    private static String namedFunction(JsonElement choice, Map<String, JsonObject> functions) {
        JsonElement function =
                choice.isJsonObject() ? choice.getAsJsonObject().get("function") : null;
        String name =
                function != null && function.isJsonObject()
                        ? string(function.getAsJsonObject(), "name", "tool_choice.function.name")
                        : null;
        if (name == null
                || !"function".equals(string(choice.getAsJsonObject(), "type", "tool_choice.type"))) {
            throw ApiException.invalid(
                    "tool_choice",
                    "expected 'auto', 'none', 'required' or {\"type\": \"function\", \"function\":"
                            + " {\"name\": ...}}");
        }
        if (!functions.containsKey(name)) {
            throw ApiException.invalid(
                    "tool_choice.function.name",
                    "no tool is named '" + name + "'; the tools are " + functions.keySet());
        }
        return name;
    }

    /** The family's call syntax around calls of the given functions, each schema checked first. */
    private OutputConstraint calls(
            ToolCallSyntax syntax, Map<String, JsonObject> functions, boolean parallel) {
        Map<String, String> parameters = new LinkedHashMap<>();
        int i = 0;
        for (Map.Entry<String, JsonObject> e : functions.entrySet()) {
            String schema = parameters(e.getValue());
            // the parameters alone first, so that a refusal names the tool and a path within it
            compiled(OutputConstraint.jsonSchema(schema), "tools[" + i++ + "].function.parameters");
            parameters.put(e.getKey(), schema);
        }
        return syntax.callConstraint(parameters, parallel);
    }

    private static String parameters(JsonObject function) {
        JsonElement parameters = function.get("parameters");
        return parameters == null || parameters.isJsonNull()
                ? ToolCallSyntax.NO_PARAMETERS
                : parameters.toString();
    }

    /** {@code response_format}: null for text, else its constraint. */
    private OutputConstraint responseFormat(JsonObject body) {
        JsonElement format = body.get("response_format");
        if (format == null || format.isJsonNull()) {
            return null;
        }
        if (!format.isJsonObject()) {
            throw ApiException.invalid("response_format", "expected {\"type\": ...}");
        }
        JsonObject object = format.getAsJsonObject();
        String type = string(object, "type", "response_format.type");
        if (type == null || type.equals("text")) {
            return null;
        }
        if (type.equals("json_object")) {
            return compiled(OutputConstraint.anyJsonObject(), "response_format");
        }
        if (!type.equals("json_schema")) {
            throw ApiException.invalid(
                    "response_format.type",
                    "expected 'text', 'json_object' or 'json_schema', got '" + type + "'");
        }
        JsonElement spec = object.get("json_schema");
        if (spec == null || !spec.isJsonObject()) {
            throw ApiException.invalid(
                    "response_format.json_schema", "expected {\"name\", \"schema\", \"strict\"}");
        }
        JsonObject jsonSchema = spec.getAsJsonObject();
        if (string(jsonSchema, "name", "response_format.json_schema.name") == null) {
            throw ApiException.invalid(
                    "response_format.json_schema.name", "the schema's name is required");
        }
        bool(jsonSchema, "strict", false); // strict or not, the output is valid by construction
        JsonElement schema = jsonSchema.get("schema");
        boolean booleanSchema =
                schema != null && schema.isJsonPrimitive() && schema.getAsJsonPrimitive().isBoolean();
        if (schema == null || !(schema.isJsonObject() || booleanSchema)) {
            throw ApiException.invalid(
                    "response_format.json_schema.schema",
                    "expected a JSON Schema (an object, or true or false)");
        }
        return compiled(
                OutputConstraint.jsonSchema(schema.toString()), "response_format.json_schema.schema");
    }

    /** Compiles a constraint now (kept for the generation), a refusal a 400 naming {@code param}. */
    private OutputConstraint compiled(OutputConstraint constraint, String param) {
        try {
            tokenizer.tokenVocabulary().compile(constraint);
        } catch (InvalidConstraintException e) {
            throw ApiException.invalid(param, e.getMessage());
        }
        return constraint;
    }
}
