package io.github.djlllmzoo.blocks.config;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Typed access to the fields of a JSON file such as {@code config.json}; every problem becomes an
 * {@link InvalidCheckpointException} naming the file, the field and the value at fault.
 */
public final class ConfigJson {

    private final Path file;
    private final JsonObject json;
    private final String path;

    private ConfigJson(Path file, JsonObject json, String path) {
        this.file = file;
        this.json = json;
        this.path = path;
    }

    /**
     * Reads and parses a JSON object file.
     *
     * @param file the file
     * @return the parsed object
     * @throws InvalidCheckpointException if the file is missing, not JSON or not an object
     */
    public static ConfigJson read(Path file) throws InvalidCheckpointException {
        if (!Files.isRegularFile(file)) {
            throw new InvalidCheckpointException(file, null, "file not found");
        }
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            JsonElement element = JsonParser.parseReader(reader);
            if (!element.isJsonObject()) {
                throw new InvalidCheckpointException(file, null, "expected a JSON object");
            }
            return new ConfigJson(file, element.getAsJsonObject(), "");
        } catch (NoSuchFileException e) {
            throw new InvalidCheckpointException(file, null, "file not found", e);
        } catch (IOException | JsonParseException e) {
            throw new InvalidCheckpointException(file, null, "not valid JSON: " + e.getMessage(), e);
        }
    }

    /**
     * Wraps an already parsed object (for tests and in-memory configs).
     *
     * @param file the file it came from, for messages (may be {@code null})
     * @param json the object
     * @return the wrapper
     */
    public static ConfigJson of(Path file, JsonObject json) {
        return new ConfigJson(file, json, "");
    }

    /** @return the file these fields came from */
    public Path file() {
        return file;
    }

    /** @return the parsed object */
    public JsonObject json() {
        return json;
    }

    /**
     * @param field the field name
     * @return whether the field is present and not null
     */
    public boolean has(String field) {
        return json.has(field) && !json.get(field).isJsonNull();
    }

    /**
     * @param field the field name
     * @return the string value
     * @throws InvalidCheckpointException if missing or not a string
     */
    public String requireString(String field) throws InvalidCheckpointException {
        if (!has(field)) {
            throw missing(field);
        }
        JsonElement e = json.get(field);
        if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isString()) {
            throw invalid(field, e, "expected a string");
        }
        return e.getAsString();
    }

    /**
     * @param field the field name
     * @param fallback the value when the field is absent or null
     * @return the string value
     * @throws InvalidCheckpointException if present but not a string
     */
    public String optString(String field, String fallback) throws InvalidCheckpointException {
        return has(field) ? requireString(field) : fallback;
    }

    /**
     * @param field the field name
     * @return the integer value
     * @throws InvalidCheckpointException if missing or not an integer
     */
    public int requireInt(String field) throws InvalidCheckpointException {
        if (!has(field)) {
            throw missing(field);
        }
        return asInt(field, json.get(field));
    }

    /**
     * @param field the field name
     * @param fallback the value when absent or null
     * @return the integer value
     * @throws InvalidCheckpointException if present but not an integer
     */
    public int optInt(String field, int fallback) throws InvalidCheckpointException {
        return has(field) ? requireInt(field) : fallback;
    }

    /**
     * @param field the field name
     * @return the integer value, or {@code null} when absent or null
     * @throws InvalidCheckpointException if present but not an integer
     */
    public Integer optInteger(String field) throws InvalidCheckpointException {
        return has(field) ? requireInt(field) : null;
    }

    /**
     * @param field the field name
     * @param fallback the value when absent or null
     * @return the number value
     * @throws InvalidCheckpointException if present but not a number
     */
    public double optDouble(String field, double fallback) throws InvalidCheckpointException {
        return has(field) ? requireDouble(field) : fallback;
    }

    /**
     * @param field the field name
     * @return the number value
     * @throws InvalidCheckpointException if missing or not a finite number
     */
    public double requireDouble(String field) throws InvalidCheckpointException {
        if (!has(field)) {
            throw missing(field);
        }
        JsonElement e = json.get(field);
        if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isNumber()) {
            throw invalid(field, e, "expected a number");
        }
        double value = e.getAsDouble();
        if (!Double.isFinite(value)) {
            throw invalid(field, e, "expected a finite number");
        }
        return value;
    }

    /**
     * @param field the field name
     * @param fallback the value when absent or null
     * @return the boolean value
     * @throws InvalidCheckpointException if present but not a boolean
     */
    public boolean optBoolean(String field, boolean fallback) throws InvalidCheckpointException {
        if (!has(field)) {
            return fallback;
        }
        JsonElement e = json.get(field);
        if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isBoolean()) {
            throw invalid(field, e, "expected true or false");
        }
        return e.getAsBoolean();
    }

    /**
     * Reads a field that may be one integer or a list of integers (like {@code eos_token_id}).
     *
     * @param field the field name
     * @return the values; empty when absent or null
     * @throws InvalidCheckpointException if present but neither an integer nor a list of them
     */
    public List<Integer> optIntList(String field) throws InvalidCheckpointException {
        if (!has(field)) {
            return Collections.emptyList();
        }
        JsonElement e = json.get(field);
        if (e.isJsonArray()) {
            JsonArray array = e.getAsJsonArray();
            List<Integer> out = new ArrayList<>(array.size());
            for (JsonElement item : array) {
                out.add(asInt(field, item));
            }
            return Collections.unmodifiableList(out);
        }
        return List.of(asInt(field, e));
    }

    /**
     * A nested object; its errors name fields by their dotted path, e.g. {@code
     * rope_scaling.factor}.
     *
     * @param field the field name
     * @return the nested object, or {@code null} when absent or null
     * @throws InvalidCheckpointException if present but not an object
     */
    public ConfigJson optObject(String field) throws InvalidCheckpointException {
        if (!has(field)) {
            return null;
        }
        JsonElement e = json.get(field);
        if (!e.isJsonObject()) {
            throw invalid(field, e, "expected an object");
        }
        return new ConfigJson(file, e.getAsJsonObject(), path + field + '.');
    }

    /**
     * Builds the exception for a field whose value makes no sense.
     *
     * @param field the field
     * @param reason why, e.g. "must be positive"
     * @return the exception, naming the file, field and value
     */
    public InvalidCheckpointException invalid(String field, String reason) {
        return invalid(field, json.get(field), reason);
    }

    private int asInt(String field, JsonElement e) throws InvalidCheckpointException {
        if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isNumber()) {
            throw invalid(field, e, "expected an integer");
        }
        double d = e.getAsDouble();
        if (d != Math.rint(d) || d > Integer.MAX_VALUE || d < Integer.MIN_VALUE) {
            throw invalid(field, e, "expected an integer");
        }
        return (int) d;
    }

    private InvalidCheckpointException missing(String field) {
        return new InvalidCheckpointException(file, path + field, "required field is missing");
    }

    private InvalidCheckpointException invalid(String field, JsonElement value, String reason) {
        return new InvalidCheckpointException(file, path + field, reason + " (found " + value + ")");
    }
}
