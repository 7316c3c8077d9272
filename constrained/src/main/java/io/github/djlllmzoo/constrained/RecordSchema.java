package io.github.djlllmzoo.constrained;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.TypeAdapter;
import com.google.gson.TypeAdapterFactory;
import com.google.gson.reflect.TypeToken;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.google.gson.stream.JsonWriter;
import java.io.IOException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Typed output: the JSON Schema of a Java record (in OpenAI's strict-mode shape: every component
 * required, no additional properties) and the parsing of a JSON text back into the record.
 *
 * <p>Mapping: records become objects (nested records go to {@code $defs}, so a record may contain
 * itself through a {@code List} or an {@code Optional}); {@code String} a string; {@code int},
 * {@code long}, {@code short}, {@code byte} and their boxes integers within their type's range
 * ({@code long} within the 15 digits constrained decoding allows); {@code double}, {@code float},
 * their boxes and {@code BigDecimal} numbers; {@code boolean} a boolean; an enum its constants'
 * names; {@code List}/{@code Set}/{@code Collection} of {@code T} and {@code T[]} arrays of {@code
 * T}; {@code Map<String, V>} an object of {@code V} values; {@code Optional<T>} {@code T} or {@code
 * null}. {@link Description} adds a {@code description}. Any other type is refused with an {@link
 * IllegalArgumentException} naming the component.
 */
public final class RecordSchema {

    private static final Gson GSON =
            new GsonBuilder().disableHtmlEscaping().registerTypeAdapterFactory(new OptionalAdapterFactory()).create();

    private final Map<Class<?>, JsonObject> defs = new LinkedHashMap<>();

    private RecordSchema() {}

    /**
     * @param type a record class
     * @return its JSON Schema's text
     * @throws IllegalArgumentException if it is not a record or a component's type has no mapping
     */
    public static String of(Class<?> type) {
        if (!type.isRecord()) {
            throw new IllegalArgumentException(type.getName() + " is not a record");
        }
        RecordSchema s = new RecordSchema();
        JsonObject root = s.schema(type, type.getSimpleName());
        JsonObject defs = new JsonObject();
        for (Map.Entry<Class<?>, JsonObject> e : s.defs.entrySet()) {
            defs.add(name(e.getKey()), e.getValue());
        }
        root.add("$defs", defs);
        return GSON.toJson(root);
    }

    /**
     * Parses a JSON text (typically a constrained output) into a record.
     *
     * @param json the text
     * @param type the record class
     * @param <T> the record type
     * @return the instance
     * @throws JsonParseException if the text does not fit the record
     */
    public static <T> T parse(String json, Class<T> type) {
        return GSON.fromJson(json, type);
    }

    private static String name(Class<?> type) {
        return type.getName().replace('$', '.');
    }

    private JsonObject schema(Type type, String where) {
        if (type instanceof ParameterizedType p) {
            Class<?> raw = (Class<?>) p.getRawType();
            Type[] args = p.getActualTypeArguments();
            if (Optional.class == raw) {
                JsonObject o = new JsonObject();
                JsonArray any = new JsonArray();
                any.add(schema(args[0], where));
                any.add(typed("null"));
                o.add("anyOf", any);
                return o;
            }
            if (Collection.class.isAssignableFrom(raw)) {
                JsonObject o = typed("array");
                o.add("items", schema(args[0], where + "[]"));
                return o;
            }
            if (Map.class.isAssignableFrom(raw) && args[0] == String.class) {
                JsonObject o = typed("object");
                o.add("additionalProperties", schema(args[1], where + "{}"));
                return o;
            }
            throw new IllegalArgumentException(where + ": no JSON Schema for type " + type.getTypeName());
        }
        if (!(type instanceof Class<?> c)) {
            throw new IllegalArgumentException(where + ": no JSON Schema for type " + type.getTypeName());
        }
        if (c == String.class || c == char.class || c == Character.class) {
            JsonObject o = typed("string");
            if (c != String.class) {
                o.addProperty("minLength", 1);
                o.addProperty("maxLength", 1);
            }
            return o;
        }
        if (c == boolean.class || c == Boolean.class) {
            return typed("boolean");
        }
        if (c == int.class || c == Integer.class) {
            return integer(Integer.MIN_VALUE, Integer.MAX_VALUE);
        }
        if (c == long.class || c == Long.class) {
            return typed("integer");
        }
        if (c == short.class || c == Short.class) {
            return integer(Short.MIN_VALUE, Short.MAX_VALUE);
        }
        if (c == byte.class || c == Byte.class) {
            return integer(Byte.MIN_VALUE, Byte.MAX_VALUE);
        }
        if (c == double.class || c == Double.class || c == float.class || c == Float.class
                || c == java.math.BigDecimal.class) {
            return typed("number");
        }
        if (c.isEnum()) {
            JsonObject o = typed("string");
            JsonArray values = new JsonArray();
            for (Object constant : c.getEnumConstants()) {
                values.add(((Enum<?>) constant).name());
            }
            o.add("enum", values);
            return o;
        }
        if (c.isArray()) {
            JsonObject o = typed("array");
            o.add("items", schema(c.getComponentType(), where + "[]"));
            return o;
        }
        if (c.isRecord()) {
            if (!defs.containsKey(c)) {
                defs.put(c, new JsonObject()); // placeholder: a record inside itself refers to it
                defs.put(c, object(c));
            }
            JsonObject ref = new JsonObject();
            ref.addProperty("$ref", "#/$defs/" + name(c));
            return ref;
        }
        throw new IllegalArgumentException(where + ": no JSON Schema for type " + c.getName());
    }

    private JsonObject object(Class<?> record) {
        JsonObject o = typed("object");
        Description about = record.getAnnotation(Description.class);
        if (about != null) {
            o.addProperty("description", about.value());
        }
        JsonObject properties = new JsonObject();
        JsonArray required = new JsonArray();
        for (RecordComponent rc : record.getRecordComponents()) {
            JsonObject p = schema(rc.getGenericType(), record.getSimpleName() + "." + rc.getName());
            Description d = rc.getAnnotation(Description.class);
            if (d != null) {
                if (p.has("$ref")) {
                    JsonObject wrapped = new JsonObject();
                    JsonArray all = new JsonArray();
                    all.add(p);
                    wrapped.add("allOf", all);
                    p = wrapped;
                }
                p.addProperty("description", d.value());
            }
            properties.add(rc.getName(), p);
            required.add(rc.getName());
        }
        o.add("properties", properties);
        o.add("required", required);
        o.addProperty("additionalProperties", false);
        return o;
    }

    private static JsonObject typed(String type) {
        JsonObject o = new JsonObject();
        o.addProperty("type", type);
        return o;
    }

    private static JsonObject integer(long min, long max) {
        JsonObject o = typed("integer");
        o.addProperty("minimum", min);
        o.addProperty("maximum", max);
        return o;
    }

    /** Gson reads JSON {@code null} (or an absent field) as {@code Optional.empty()}. */
    private static final class OptionalAdapterFactory implements TypeAdapterFactory {
        @Override
        @SuppressWarnings("unchecked")
        public <T> TypeAdapter<T> create(Gson gson, TypeToken<T> token) {
            if (token.getRawType() != Optional.class) {
                return null;
            }
            Type inner =
                    token.getType() instanceof ParameterizedType p ? p.getActualTypeArguments()[0] : Object.class;
            TypeAdapter<Object> delegate = (TypeAdapter<Object>) gson.getAdapter(TypeToken.get(inner));
            return (TypeAdapter<T>) new TypeAdapter<Optional<Object>>() {
                @Override
                public void write(JsonWriter out, Optional<Object> value) throws IOException {
                    if (value == null || value.isEmpty()) {
                        out.nullValue();
                    } else {
                        delegate.write(out, value.get());
                    }
                }

                @Override
                public Optional<Object> read(JsonReader in) throws IOException {
                    if (in.peek() == JsonToken.NULL) {
                        in.nextNull();
                        return Optional.empty();
                    }
                    return Optional.ofNullable(delegate.read(in));
                }
            };
        }
    }
}
