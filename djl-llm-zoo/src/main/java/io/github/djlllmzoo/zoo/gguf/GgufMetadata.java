package io.github.djlllmzoo.zoo.gguf;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * A GGUF file's metadata key-values, with typed access that names the file and key when a value is
 * missing or of the wrong type. Integers of every width are held as {@code Long}, both float widths
 * as {@code Double}, arrays as lists.
 */
public final class GgufMetadata {

    private final Path file;
    private final Map<String, Object> values;

    GgufMetadata(Path file, Map<String, Object> values) {
        this.file = file;
        this.values = Collections.unmodifiableMap(values);
    }

    /** @return the file the metadata came from */
    public Path file() {
        return file;
    }

    /** @return every key-value, in file order */
    public Map<String, Object> values() {
        return values;
    }

    /**
     * @param key the metadata key, e.g. {@code general.architecture}
     * @return whether the key is present
     */
    public boolean has(String key) {
        return values.containsKey(key);
    }

    /**
     * @return {@code general.architecture}
     * @throws InvalidGgufException when absent
     */
    public String architecture() throws InvalidGgufException {
        return requireString("general.architecture");
    }

    /**
     * @param key the key
     * @return its string value
     * @throws InvalidGgufException when absent or not a string
     */
    public String requireString(String key) throws InvalidGgufException {
        return typed(key, require(key), String.class, "a string");
    }

    /**
     * @param key the key
     * @param fallback the value when absent
     * @return its string value, or {@code fallback}
     * @throws InvalidGgufException when present but not a string
     */
    public String optString(String key, String fallback) throws InvalidGgufException {
        Object value = values.get(key);
        return value == null ? fallback : typed(key, value, String.class, "a string");
    }

    /**
     * @param key the key
     * @return its integer value
     * @throws InvalidGgufException when absent or not an integer
     */
    public long requireLong(String key) throws InvalidGgufException {
        return typed(key, require(key), Long.class, "an integer");
    }

    /**
     * @param key the key
     * @param fallback the value when absent
     * @return its integer value, or {@code fallback}
     * @throws InvalidGgufException when present but not an integer
     */
    public long optLong(String key, long fallback) throws InvalidGgufException {
        Object value = values.get(key);
        return value == null ? fallback : typed(key, value, Long.class, "an integer");
    }

    /**
     * @param key the key
     * @return its value as a positive int
     * @throws InvalidGgufException when absent, not an integer, or not in [1, 2^31)
     */
    public int requirePositiveInt(String key) throws InvalidGgufException {
        long value = requireLong(key);
        if (value <= 0 || value > Integer.MAX_VALUE) {
            throw new InvalidGgufException(file, key, "must be a positive int, not " + value);
        }
        return (int) value;
    }

    /**
     * @param key the key
     * @param fallback the value when absent
     * @return its numeric value (integer or float), or {@code fallback}
     * @throws InvalidGgufException when present but not a number
     */
    public double optDouble(String key, double fallback) throws InvalidGgufException {
        Object value = values.get(key);
        if (value == null) {
            return fallback;
        }
        if (!(value instanceof Number)) {
            throw new InvalidGgufException(file, key, "must be a number, not " + describe(value));
        }
        return ((Number) value).doubleValue();
    }

    /**
     * @param key the key
     * @param fallback the value when absent
     * @return its boolean value, or {@code fallback}
     * @throws InvalidGgufException when present but not a bool
     */
    public boolean optBoolean(String key, boolean fallback) throws InvalidGgufException {
        Object value = values.get(key);
        return value == null ? fallback : typed(key, value, Boolean.class, "a bool");
    }

    /**
     * @param key the key
     * @param elementType the class of its elements ({@code String}, {@code Long}, {@code Double})
     * @param <T> that class
     * @return its array value, or {@code null} when absent
     * @throws InvalidGgufException when present but not an array of that type
     */
    @SuppressWarnings("unchecked")
    public <T> List<T> optList(String key, Class<T> elementType) throws InvalidGgufException {
        Object value = values.get(key);
        if (value == null) {
            return null;
        }
        if (!(value instanceof List)) {
            throw new InvalidGgufException(file, key, "must be an array, not " + describe(value));
        }
        List<?> list = (List<?>) value;
        for (Object element : list) {
            if (!elementType.isInstance(element)) {
                throw new InvalidGgufException(
                        file, key, "must be an array of " + elementType.getSimpleName() + ", has " + describe(element));
            }
        }
        return (List<T>) list;
    }

    /**
     * @param key the key
     * @return its numeric array as doubles, or {@code null} when absent
     * @throws InvalidGgufException when present but not a numeric array
     */
    public List<Double> optNumbers(String key) throws InvalidGgufException {
        List<Number> list = optList(key, Number.class);
        if (list == null) {
            return null;
        }
        List<Double> out = new ArrayList<>(list.size());
        for (Number n : list) {
            out.add(n.doubleValue());
        }
        return out;
    }

    private Object require(String key) throws InvalidGgufException {
        Object value = values.get(key);
        if (value == null) {
            throw new InvalidGgufException(file, key, "required metadata key is missing");
        }
        return value;
    }

    private <T> T typed(String key, Object value, Class<T> type, String what) throws InvalidGgufException {
        if (!type.isInstance(value)) {
            throw new InvalidGgufException(file, key, "must be " + what + ", not " + describe(value));
        }
        return type.cast(value);
    }

    private static String describe(Object value) {
        if (value instanceof List) {
            return "an array";
        }
        return value.getClass().getSimpleName().toLowerCase(java.util.Locale.ROOT) + " " + value;
    }
}
