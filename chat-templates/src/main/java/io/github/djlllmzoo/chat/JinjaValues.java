package io.github.djlllmzoo.chat;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import com.google.gson.JsonSyntaxException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON values as a chat template sees them in Python: objects as ordered maps (so {@code tojson}
 * writes keys in the order given), arrays as lists, integers as {@code Long} and numbers written
 * with a fraction or exponent as {@code Double} (Python's {@code json.loads} keeps that
 * distinction, and {@code tojson} writes {@code 1} and {@code 1.0} apart).
 */
final class JinjaValues {

    private JinjaValues() {}

    /**
     * @param json a JSON value
     * @return the value as maps, lists, strings, numbers, booleans and null
     */
    static Object of(JsonElement json) {
        if (json == null || json.isJsonNull()) {
            return null;
        }
        if (json.isJsonObject()) {
            Map<String, Object> map = new LinkedHashMap<>();
            for (Map.Entry<String, JsonElement> e : json.getAsJsonObject().entrySet()) {
                map.put(e.getKey(), of(e.getValue()));
            }
            return map;
        }
        if (json.isJsonArray()) {
            List<Object> list = new ArrayList<>();
            for (JsonElement item : json.getAsJsonArray()) {
                list.add(of(item));
            }
            return list;
        }
        JsonPrimitive primitive = json.getAsJsonPrimitive();
        if (primitive.isBoolean()) {
            return primitive.getAsBoolean();
        }
        if (primitive.isString()) {
            return primitive.getAsString();
        }
        String text = primitive.getAsNumber().toString();
        if (text.contains(".") || text.contains("e") || text.contains("E")) {
            return primitive.getAsDouble();
        }
        BigInteger exact = new BigInteger(text);
        return exact.bitLength() < Long.SIZE ? (Object) exact.longValueExact() : exact;
    }

    /**
     * Tool-call arguments as transformers' templates expect them: the object they encode (templates
     * write {@code arguments | tojson}), or the text itself when it is not a JSON object.
     *
     * @param arguments the arguments as OpenAI's API carries them, JSON text
     * @return a map, or the text
     */
    static Object arguments(String arguments) {
        try {
            JsonElement parsed = JsonParser.parseString(arguments);
            return parsed.isJsonObject() ? of(parsed) : arguments;
        } catch (JsonSyntaxException e) {
            return arguments;
        }
    }

    /**
     * @param tools OpenAI tool specifications
     * @return them as the template's {@code tools}
     */
    static List<Object> tools(List<JsonObject> tools) {
        List<Object> out = new ArrayList<>(tools.size());
        for (JsonObject tool : tools) {
            out.add(of(tool));
        }
        return out;
    }
}
