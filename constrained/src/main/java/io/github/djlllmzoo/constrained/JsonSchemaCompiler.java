package io.github.djlllmzoo.constrained;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compiles a JSON Schema into a {@link Grammar} fragment whose texts are exactly JSON values valid
 * against it (or, where a keyword leaves freedom the grammar cannot express, a valid subset of
 * them: properties come in the schema's order, additional properties are not generated).
 *
 * <p>Supported: {@code type} (one or a list), {@code properties}, {@code required}, {@code
 * additionalProperties} ({@code false}, {@code true}, or a schema for an object without {@code
 * properties}), {@code items} (a schema, or {@code false} after {@code prefixItems}), {@code
 * prefixItems}, {@code minItems}, {@code maxItems}, {@code enum}, {@code const},
 * {@code minLength}, {@code maxLength}, {@code pattern} (see {@link RegexPattern}), {@code format}
 * ({@code date}, {@code time}, {@code date-time}, {@code uuid}, {@code email}, {@code ipv4}),
 * {@code minimum}/{@code maximum}/{@code exclusiveMinimum}/{@code exclusiveMaximum} (for a number
 * only with integer bounds, so they are kept exactly), {@code anyOf}, {@code allOf} of one schema,
 * {@code $ref} to {@code #} or a local pointer (recursion included), {@code $defs}/{@code
 * definitions}, and the annotations ({@code description}, {@code title}, ...), which are ignored.
 * Any other keyword is refused with an {@link UnsupportedSchemaException} naming it and its path.
 */
final class JsonSchemaCompiler {

    private static final Set<String> ANNOTATIONS =
            Set.of("description", "title", "$schema", "$id", "default", "examples", "$comment",
                    "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "strict");
    private static final Set<String> KEYWORDS =
            Set.of("type", "properties", "required", "additionalProperties", "items", "minItems",
                    "maxItems", "prefixItems", "enum", "const", "minLength", "maxLength", "pattern", "format",
                    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "anyOf", "allOf", "$ref");
    private static final Map<String, String> FORMATS = formats();
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().create();
    /** The most characters a bounded string or items a bounded array may be unrolled to. */
    private static final int MAX_UNROLLED = 10_000;

    private final Grammar g;
    private final JsonGrammar json;
    private final JsonObject root;
    private final Map<String, Integer> refRules = new HashMap<>();

    private JsonSchemaCompiler(JsonGrammar json, JsonObject root) {
        this.g = json.grammar();
        this.json = json;
        this.root = root;
    }

    /**
     * @param g the grammar to build in
     * @param schemaJson the schema
     * @return leading white space, then a value valid against the schema
     */
    static Grammar.Fragment compile(Grammar g, String schemaJson) {
        JsonElement parsed;
        try {
            parsed = JsonParser.parseString(schemaJson);
        } catch (JsonParseException e) {
            throw new InvalidConstraintException("$", "the schema is not valid JSON: " + e.getMessage());
        }
        JsonGrammar json = new JsonGrammar(g);
        if (parsed.isJsonPrimitive() && parsed.getAsJsonPrimitive().isBoolean()) {
            return g.seq(json.ws(), new JsonSchemaCompiler(json, new JsonObject()).value(parsed, "$"));
        }
        if (!parsed.isJsonObject()) {
            throw new InvalidConstraintException("$", "a schema must be a JSON object or a boolean");
        }
        JsonSchemaCompiler c = new JsonSchemaCompiler(json, parsed.getAsJsonObject());
        return g.seq(json.ws(), c.value(parsed, "$"));
    }

    /** @return leading white space, then any JSON object */
    static Grammar.Fragment anyObject(Grammar g) {
        JsonGrammar json = new JsonGrammar(g);
        return g.seq(json.ws(), g.call(json.anyObjectRule()));
    }

    private Grammar.Fragment value(JsonElement schema, String path) {
        if (schema.isJsonPrimitive() && schema.getAsJsonPrimitive().isBoolean()) {
            if (!schema.getAsBoolean()) {
                throw new InvalidConstraintException(path, "schema false allows no value");
            }
            return g.call(json.anyValueRule());
        }
        if (!schema.isJsonObject()) {
            throw new InvalidConstraintException(path, "a schema must be a JSON object or a boolean");
        }
        JsonObject s = schema.getAsJsonObject();
        for (String key : s.keySet()) {
            if (!KEYWORDS.contains(key) && !ANNOTATIONS.contains(key)) {
                throw new UnsupportedSchemaException(path, key, "constrained decoding cannot guarantee it");
            }
        }
        if (s.has("$ref")) {
            for (String key : s.keySet()) {
                if (!key.equals("$ref") && KEYWORDS.contains(key)) {
                    throw new UnsupportedSchemaException(path, key, "keywords beside $ref are not supported");
                }
            }
            return g.call(refRule(string(s, "$ref", path), path));
        }
        if (s.has("const")) {
            return g.text(GSON.toJson(s.get("const")));
        }
        if (s.has("enum")) {
            JsonArray values = array(s, "enum", path);
            if (values.isEmpty()) {
                throw new InvalidConstraintException(path + ".enum", "an empty enum allows no value");
            }
            List<Grammar.Fragment> options = new ArrayList<>();
            for (JsonElement v : values) {
                options.add(g.text(GSON.toJson(v)));
            }
            return g.alt(options);
        }
        if (s.has("anyOf")) {
            List<Grammar.Fragment> options = new ArrayList<>();
            JsonArray list = array(s, "anyOf", path);
            for (int i = 0; i < list.size(); i++) {
                options.add(value(list.get(i), path + ".anyOf[" + i + "]"));
            }
            if (options.isEmpty()) {
                throw new InvalidConstraintException(path + ".anyOf", "an empty anyOf allows no value");
            }
            return g.alt(options);
        }
        if (s.has("allOf")) {
            JsonArray list = array(s, "allOf", path);
            if (list.size() != 1) {
                throw new UnsupportedSchemaException(path, "allOf", "only an allOf of one schema is supported");
            }
            return value(list.get(0), path + ".allOf[0]");
        }
        List<String> types = types(s, path);
        List<Grammar.Fragment> options = new ArrayList<>();
        for (String type : types) {
            options.add(typed(s, type, path));
        }
        return g.alt(options);
    }

    private List<String> types(JsonObject s, String path) {
        if (!s.has("type")) {
            if (s.has("properties") || s.has("additionalProperties") || s.has("required")) {
                return List.of("object");
            }
            if (s.has("items") || s.has("prefixItems") || s.has("minItems") || s.has("maxItems")) {
                return List.of("array");
            }
            if (s.has("minLength") || s.has("maxLength") || s.has("pattern") || s.has("format")) {
                return List.of("string");
            }
            if (s.has("minimum") || s.has("maximum") || s.has("exclusiveMinimum") || s.has("exclusiveMaximum")) {
                return List.of("number");
            }
            return List.of("any");
        }
        JsonElement t = s.get("type");
        Set<String> out = new LinkedHashSet<>();
        if (t.isJsonArray()) {
            for (JsonElement e : t.getAsJsonArray()) {
                out.add(e.getAsString());
            }
        } else if (t.isJsonPrimitive() && t.getAsJsonPrimitive().isString()) {
            out.add(t.getAsString());
        }
        if (out.isEmpty()) {
            throw new InvalidConstraintException(path + ".type", "must be a type name or a list of them");
        }
        return new ArrayList<>(out);
    }

    private Grammar.Fragment typed(JsonObject s, String type, String path) {
        switch (type) {
            case "any":
                return g.call(json.anyValueRule());
            case "object":
                return object(s, path);
            case "array":
                return array(s, path);
            case "string":
                return string(s, path);
            case "integer":
                return integer(s, path);
            case "number":
                return number(s, path);
            case "boolean":
                return g.alt(g.text("true"), g.text("false"));
            case "null":
                return g.text("null");
            default:
                throw new InvalidConstraintException(path + ".type", "unknown type '" + type + "'");
        }
    }

    private Grammar.Fragment object(JsonObject s, String path) {
        JsonObject properties = s.has("properties") ? object(s, "properties", path) : new JsonObject();
        Set<String> required = new LinkedHashSet<>();
        if (s.has("required")) {
            for (JsonElement e : array(s, "required", path)) {
                required.add(e.getAsString());
            }
        }
        JsonElement additional = s.get("additionalProperties");
        boolean closed = additional != null && additional.isJsonPrimitive() && !additional.getAsBoolean();
        for (String name : required) {
            if (!properties.has(name)) {
                if (closed) {
                    throw new InvalidConstraintException(
                            path + ".required", "'" + name + "' is required but additionalProperties is false");
                }
                throw new UnsupportedSchemaException(
                        path, "required", "'" + name + "' is required but not among the properties");
            }
        }
        if (properties.size() == 0) {
            if (closed) {
                return g.seq(g.text("{"), json.ws(), g.text("}"));
            }
            if (additional != null && additional.isJsonObject()) {
                return json.map(() -> value(additional, path + ".additionalProperties"));
            }
            return g.call(json.anyObjectRule());
        }
        // Properties in the schema's order; an optional one may be left out. noneYet[i] / someYet[i]:
        // before property i with no property written yet / with some (so a comma comes first).
        List<String> names = new ArrayList<>(properties.keySet());
        int n = names.size();
        int[] noneYet = new int[n + 1];
        int[] someYet = new int[n + 1];
        for (int i = 0; i <= n; i++) {
            noneYet[i] = g.newState();
            someYet[i] = g.newState();
        }
        Grammar.Fragment open = g.seq(g.text("{"), json.ws());
        g.epsilon(open.end(), noneYet[0]);
        for (int i = 0; i < n; i++) {
            String name = names.get(i);
            int key = g.newState();
            g.epsilon(noneYet[i], key);
            Grammar.Fragment comma = g.seq(json.ws(), g.text(","), json.ws());
            g.epsilon(someYet[i], comma.start());
            g.epsilon(comma.end(), key);
            Grammar.Fragment pair =
                    g.seq(
                            g.text(GSON.toJson(new JsonPrimitive(name))),
                            json.ws(),
                            g.text(":"),
                            json.ws(),
                            value(properties.get(name), path + ".properties." + name));
            g.epsilon(key, pair.start());
            g.epsilon(pair.end(), someYet[i + 1]);
            if (!required.contains(name)) {
                g.epsilon(noneYet[i], noneYet[i + 1]);
                g.epsilon(someYet[i], someYet[i + 1]);
            }
        }
        // One white-space site between two tokens: "{" ws "}" when nothing was written.
        Grammar.Fragment close = g.text("}");
        Grammar.Fragment afterSome = g.seq(json.ws(), close);
        g.epsilon(noneYet[n], close.start());
        g.epsilon(someYet[n], afterSome.start());
        return new Grammar.Fragment(open.start(), close.end());
    }

    private Grammar.Fragment array(JsonObject s, String path) {
        int min = count(s, "minItems", 0, path);
        int max = count(s, "maxItems", Integer.MAX_VALUE, path);
        JsonArray prefix = s.has("prefixItems") ? array(s, "prefixItems", path) : new JsonArray();
        JsonElement items = s.get("items");
        boolean closed = items != null && items.isJsonPrimitive() && items.getAsJsonPrimitive().isBoolean()
                && !items.getAsBoolean(); // items: false
        if (closed) {
            max = Math.min(max, prefix.size());
        }
        if (min > max) {
            throw new InvalidConstraintException(path, "minItems " + min + " is above the " + max + " items allowed");
        }
        if (max != Integer.MAX_VALUE && max > MAX_UNROLLED) {
            throw new UnsupportedSchemaException(path, "maxItems", "above " + MAX_UNROLLED);
        }
        int rest = -1;
        if (!closed && items != null) {
            rest = g.newRule();
            g.define(rest, value(items, path + ".items"));
        } else if (!closed) {
            rest = json.anyValueRule();
        }
        int item = rest;
        if (prefix.isEmpty()) {
            return json.list(() -> g.call(item), min, max);
        }
        if (max == 0) {
            return g.seq(g.text("["), json.ws(), g.text("]"));
        }
        Grammar.Fragment elements = g.seq(elements(prefix, rest, 0, min, max, path), json.ws());
        return g.seq(g.text("["), json.ws(), min == 0 ? g.optional(elements) : elements, g.text("]"));
    }

    /**
     * Elements {@code k, k + 1, ...} of an array with {@code prefixItems}: element {@code k} (its
     * prefix schema, or {@code rest}'s beyond the prefix), then the following ones, optional from
     * {@code min} on, at most {@code max} in all.
     */
    private Grammar.Fragment elements(JsonArray prefix, int rest, int k, int min, int max, String path) {
        Grammar.Fragment element =
                k < prefix.size() ? value(prefix.get(k), path + ".prefixItems[" + k + "]") : g.call(rest);
        int next = k + 1;
        if (next == max) {
            return element;
        }
        if (next >= prefix.size()) {
            Grammar.Fragment tail =
                    g.repeat(
                            () -> g.seq(json.ws(), g.text(","), json.ws(), g.call(rest)),
                            Math.max(min - next, 0),
                            max == Integer.MAX_VALUE ? max : max - next);
            return g.seq(element, tail);
        }
        Grammar.Fragment following =
                g.seq(json.ws(), g.text(","), json.ws(), elements(prefix, rest, next, min, max, path));
        return g.seq(element, next >= min ? g.optional(following) : following);
    }

    private Grammar.Fragment string(JsonObject s, String path) {
        int min = count(s, "minLength", 0, path);
        int max = count(s, "maxLength", Integer.MAX_VALUE, path);
        if (min > max) {
            throw new InvalidConstraintException(path, "minLength " + min + " is above maxLength " + max);
        }
        boolean lengths = s.has("minLength") || s.has("maxLength");
        Grammar.Fragment body;
        if (s.has("format")) {
            String format = string(s, "format", path);
            String pattern = FORMATS.get(format);
            if (pattern == null) {
                throw new UnsupportedSchemaException(
                        path, "format", "'" + format + "' (supported: " + String.join(", ", FORMATS.keySet()) + ")");
            }
            if (lengths || s.has("pattern")) {
                throw new UnsupportedSchemaException(
                        path, lengths ? "maxLength" : "pattern", "cannot be combined with format");
            }
            body = new RegexPattern(pattern, path + ".format").toFragment(g, true);
        } else if (s.has("pattern")) {
            if (lengths) {
                throw new UnsupportedSchemaException(
                        path, s.has("maxLength") ? "maxLength" : "minLength", "cannot be combined with pattern");
            }
            RegexPattern pattern = new RegexPattern(string(s, "pattern", path), path + ".pattern");
            // JSON Schema patterns match anywhere unless anchored.
            body =
                    g.seq(
                            pattern.anchoredStart() ? g.empty() : g.star(json.stringChar()),
                            pattern.toFragment(g, true),
                            pattern.anchoredEnd() ? g.empty() : g.star(json.stringChar()));
        } else {
            if (max != Integer.MAX_VALUE && max > MAX_UNROLLED) {
                throw new UnsupportedSchemaException(path, "maxLength", "above " + MAX_UNROLLED);
            }
            body = g.repeat(json::stringChar, min, max);
        }
        return g.seq(g.text("\""), body, g.text("\""));
    }

    private Grammar.Fragment integer(JsonObject s, String path) {
        BigDecimal[] b = bounds(s, path);
        Long lo = null;
        Long hi = null;
        if (b[0] != null) {
            lo = exact(s.has("exclusiveMinimum") ? b[0].setScale(0, RoundingMode.FLOOR).add(BigDecimal.ONE)
                    : b[0].setScale(0, RoundingMode.CEILING), path, "minimum");
        }
        if (b[1] != null) {
            hi = exact(s.has("exclusiveMaximum") ? b[1].setScale(0, RoundingMode.CEILING).subtract(BigDecimal.ONE)
                    : b[1].setScale(0, RoundingMode.FLOOR), path, "maximum");
        }
        if (lo != null && hi != null && lo > hi) {
            throw new InvalidConstraintException(path, "no integer lies between the bounds " + lo + " and " + hi);
        }
        return json.integer(lo, hi);
    }

    private Grammar.Fragment number(JsonObject s, String path) {
        BigDecimal[] b = bounds(s, path);
        if (b[0] == null && b[1] == null) {
            return json.anyNumber();
        }
        Long lo = null;
        Long hi = null;
        Long intLo = null;
        Long intHi = null;
        if (b[0] != null) {
            lo = integral(b[0], path, s.has("exclusiveMinimum") ? "exclusiveMinimum" : "minimum");
            intLo = s.has("exclusiveMinimum") ? lo + 1 : lo;
        }
        if (b[1] != null) {
            hi = integral(b[1], path, s.has("exclusiveMaximum") ? "exclusiveMaximum" : "maximum");
            intHi = s.has("exclusiveMaximum") ? hi - 1 : hi;
        }
        if (lo != null && hi != null && (lo > hi || (lo.equals(hi) && !intLo.equals(lo)))) {
            throw new InvalidConstraintException(path, "no number lies between the bounds");
        }
        return json.boundedNumber(intLo, intHi, lo, hi);
    }

    /** The lower and upper bound (either {@code null}), inclusive or exclusive as the keyword says. */
    private BigDecimal[] bounds(JsonObject s, String path) {
        if (s.has("minimum") && s.has("exclusiveMinimum") || s.has("maximum") && s.has("exclusiveMaximum")) {
            throw new UnsupportedSchemaException(path, "exclusiveMinimum", "give either the inclusive or the exclusive bound");
        }
        BigDecimal lo = decimal(s, s.has("exclusiveMinimum") ? "exclusiveMinimum" : "minimum", path);
        BigDecimal hi = decimal(s, s.has("exclusiveMaximum") ? "exclusiveMaximum" : "maximum", path);
        return new BigDecimal[] {lo, hi};
    }

    private static BigDecimal decimal(JsonObject s, String key, String path) {
        if (!s.has(key)) {
            return null;
        }
        JsonElement e = s.get(key);
        if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isNumber()) {
            throw new InvalidConstraintException(path + "." + key, "must be a number");
        }
        return e.getAsBigDecimal();
    }

    private static long integral(BigDecimal v, String path, String key) {
        if (v.stripTrailingZeros().scale() > 0) {
            throw new UnsupportedSchemaException(
                    path, key, "a number's bound must be an integer to be kept exactly, got " + v.toPlainString());
        }
        return exact(v, path, key);
    }

    private static long exact(BigDecimal v, String path, String key) {
        try {
            return v.longValueExact();
        } catch (ArithmeticException e) {
            throw new UnsupportedSchemaException(path, key, "bound " + v.toPlainString() + " is out of range");
        }
    }

    private int refRule(String ref, String path) {
        Integer known = refRules.get(ref);
        if (known != null) {
            return known;
        }
        if (!ref.equals("#") && !ref.startsWith("#/")) {
            throw new UnsupportedSchemaException(path, "$ref", "only local references (#, #/$defs/...) are supported: " + ref);
        }
        JsonElement target = root;
        String pointer = "$";
        if (ref.length() > 1) {
            for (String part : ref.substring(2).split("/", -1)) {
                String key = part.replace("~1", "/").replace("~0", "~");
                pointer += "." + key;
                if (!target.isJsonObject() || !target.getAsJsonObject().has(key)) {
                    throw new InvalidConstraintException(path + ".$ref", "'" + ref + "' points at nothing");
                }
                target = target.getAsJsonObject().get(key);
            }
        }
        int rule = g.newRule();
        refRules.put(ref, rule);
        g.define(rule, value(target, pointer));
        return rule;
    }

    private static int count(JsonObject s, String key, int absent, String path) {
        if (!s.has(key)) {
            return absent;
        }
        JsonElement e = s.get(key);
        if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isNumber()) {
            throw new InvalidConstraintException(path + "." + key, "must be a non-negative integer");
        }
        BigDecimal v = e.getAsBigDecimal();
        if (v.signum() < 0 || v.stripTrailingZeros().scale() > 0) {
            throw new InvalidConstraintException(path + "." + key, "must be a non-negative integer, got " + v);
        }
        return v.compareTo(BigDecimal.valueOf(Integer.MAX_VALUE)) >= 0 ? Integer.MAX_VALUE - 1 : v.intValue();
    }

    private static String string(JsonObject s, String key, String path) {
        JsonElement e = s.get(key);
        if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isString()) {
            throw new InvalidConstraintException(path + "." + key, "must be a string");
        }
        return e.getAsString();
    }

    private static JsonArray array(JsonObject s, String key, String path) {
        JsonElement e = s.get(key);
        if (!e.isJsonArray()) {
            throw new InvalidConstraintException(path + "." + key, "must be an array");
        }
        return e.getAsJsonArray();
    }

    private static JsonObject object(JsonObject s, String key, String path) {
        JsonElement e = s.get(key);
        if (!e.isJsonObject()) {
            throw new InvalidConstraintException(path + "." + key, "must be an object");
        }
        return e.getAsJsonObject();
    }

    private static Map<String, String> formats() {
        String date =
                "\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)"
                        + "|02-(?:0[1-9]|1\\d|2[0-8]))";
        // Offsets within Java's +-18:00 (RFC 3339 allows up to 23:59, java.time does not); a time
        // alone in UTC, as validators that move it to UTC then refuse a change of day.
        String clock = "(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d{1,6})?";
        String time = clock + "Z";
        String octet = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
        String label = "[a-z0-9]{1,20}";
        Map<String, String> f = new java.util.LinkedHashMap<>();
        f.put("date", date);
        f.put("time", time);
        f.put("date-time", date + "T" + clock + "(?:Z|[+-](?:0\\d|1[0-7]):[0-5]\\d)");
        f.put("uuid", "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
        // A local part of at most 62 characters (RFC 5321 allows 64); top-level domains that exist
        // (validators check them against IANA's list).
        f.put("email", label + "(?:[.+-]" + label + "){0,2}@" + label + "(?:-" + label + ")?(?:\\." + label
                + "){0,2}\\.(?:com|org|net|edu|gov|io|dev|ai|de|fr|uk|jp|ch|nl)");
        f.put("ipv4", "(?:" + octet + "\\.){3}" + octet);
        return f;
    }
}
