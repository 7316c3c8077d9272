package io.github.djlllmzoo.langchain4j;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.model.chat.request.json.JsonAnyOfSchema;
import dev.langchain4j.model.chat.request.json.JsonArraySchema;
import dev.langchain4j.model.chat.request.json.JsonBooleanSchema;
import dev.langchain4j.model.chat.request.json.JsonEnumSchema;
import dev.langchain4j.model.chat.request.json.JsonIntegerSchema;
import dev.langchain4j.model.chat.request.json.JsonNullSchema;
import dev.langchain4j.model.chat.request.json.JsonNumberSchema;
import dev.langchain4j.model.chat.request.json.JsonObjectSchema;
import dev.langchain4j.model.chat.request.json.JsonRawSchema;
import dev.langchain4j.model.chat.request.json.JsonReferenceSchema;
import dev.langchain4j.model.chat.request.json.JsonSchemaElement;
import dev.langchain4j.model.chat.request.json.JsonStringSchema;
import io.github.djlllmzoo.chat.ToolCallSyntax;
import java.util.Map;

/**
 * LangChain4j's JSON schema elements as JSON Schema documents, as {@code OpenAiChatModel} writes
 * them in strict mode ({@code strictJsonSchema}, {@code strictTools}) and the {@code constrained}
 * module compiles: every property of an object is required and the object is closed ({@code
 * "additionalProperties": false}), so that the value fills the record or the tool's parameters
 * it is for; definitions go to {@code $defs}, references to {@code "#/$defs/NAME"}; descriptions
 * are kept (they tell the model, and the compiler ignores them).
 */
final class JsonSchemas {

    private JsonSchemas() {}

    /**
     * @param element a schema element (the root of a {@code ResponseFormat}'s schema, a tool's
     *     parameters)
     * @return the JSON Schema document
     * @throws IllegalArgumentException for an element type this mapping does not know, or a raw
     *     schema that is not JSON
     */
    static JsonObject of(JsonSchemaElement element) {
        JsonObject out = new JsonObject();
        if (element instanceof JsonObjectSchema object) {
            out.addProperty("type", "object");
            JsonObject properties = new JsonObject();
            if (object.properties() != null) {
                for (Map.Entry<String, JsonSchemaElement> e : object.properties().entrySet()) {
                    properties.add(e.getKey(), of(e.getValue()));
                }
            }
            out.add("properties", properties);
            // strict mode: every property present, nothing else, so the value fills the record
            JsonArray required = new JsonArray();
            properties.keySet().forEach(required::add);
            out.add("required", required);
            out.addProperty("additionalProperties", false);
            if (object.definitions() != null && !object.definitions().isEmpty()) {
                JsonObject defs = new JsonObject();
                for (Map.Entry<String, JsonSchemaElement> e : object.definitions().entrySet()) {
                    defs.add(e.getKey(), of(e.getValue()));
                }
                out.add("$defs", defs);
            }
        } else if (element instanceof JsonArraySchema array) {
            out.addProperty("type", "array");
            if (array.items() != null) {
                out.add("items", of(array.items()));
            }
        } else if (element instanceof JsonStringSchema) {
            out.addProperty("type", "string");
        } else if (element instanceof JsonIntegerSchema) {
            out.addProperty("type", "integer");
        } else if (element instanceof JsonNumberSchema) {
            out.addProperty("type", "number");
        } else if (element instanceof JsonBooleanSchema) {
            out.addProperty("type", "boolean");
        } else if (element instanceof JsonNullSchema) {
            out.addProperty("type", "null");
        } else if (element instanceof JsonEnumSchema enumeration) {
            out.addProperty("type", "string");
            JsonArray values = new JsonArray();
            enumeration.enumValues().forEach(values::add);
            out.add("enum", values);
        } else if (element instanceof JsonAnyOfSchema anyOf) {
            JsonArray options = new JsonArray();
            anyOf.anyOf().forEach(option -> options.add(of(option)));
            out.add("anyOf", options);
        } else if (element instanceof JsonReferenceSchema reference) {
            out.addProperty("$ref", "#/$defs/" + reference.reference());
        } else if (element instanceof JsonRawSchema raw) {
            try {
                return JsonParser.parseString(raw.schema()).getAsJsonObject();
            } catch (JsonParseException | IllegalStateException e) {
                throw new IllegalArgumentException(
                        "a JsonRawSchema is not a JSON object: " + raw.schema(), e);
            }
        } else {
            throw new IllegalArgumentException(
                    "JSON schema element " + element.getClass().getName() + " is not supported");
        }
        if (element.description() != null && !(element instanceof JsonReferenceSchema)) {
            out.addProperty("description", element.description());
        }
        return out;
    }

    /**
     * A tool as OpenAI's function specification, as chat templates read {@code tools}.
     *
     * @param tool the tool
     * @return {@code {"type": "function", "function": {"name", "description", "parameters"}}}
     */
    static JsonObject function(ToolSpecification tool) {
        JsonObject function = new JsonObject();
        function.addProperty("name", tool.name());
        if (tool.description() != null) {
            function.addProperty("description", tool.description());
        }
        function.add("parameters", JsonParser.parseString(parameters(tool)));
        JsonObject spec = new JsonObject();
        spec.addProperty("type", "function");
        spec.add("function", function);
        return spec;
    }

    /**
     * @param tool the tool
     * @return its parameter schema as JSON text, an object without properties when it takes none
     */
    static String parameters(ToolSpecification tool) {
        return tool.parameters() == null
                ? ToolCallSyntax.NO_PARAMETERS
                : of(tool.parameters()).toString();
    }
}
