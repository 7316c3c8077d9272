package io.github.djlllmzoo.server;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.math.BigDecimal;

/**
 * Typed reads of a request's JSON fields: each absent or {@code null} field reads as {@code null}
 * (or the fallback), each value of the wrong type or out of range is an {@link ApiException}
 * naming the field.
 */
final class JsonFields {

    private JsonFields() {}

    static boolean isString(JsonElement e) {
        return e != null && e.isJsonPrimitive() && e.getAsJsonPrimitive().isString();
    }

    static boolean present(JsonObject body, String field) {
        JsonElement value = body.get(field);
        return value != null && !value.isJsonNull();
    }

    static String string(JsonObject body, String field) {
        return string(body, field, field);
    }

    static String string(JsonObject body, String field, String param) {
        JsonElement value = body.get(field);
        if (value == null || value.isJsonNull()) {
            return null;
        }
        if (!isString(value)) {
            throw ApiException.invalid(param, "expected a string, got " + value);
        }
        return value.getAsString();
    }

    static boolean bool(JsonObject body, String field, boolean fallback) {
        JsonElement value = body.get(field);
        if (value == null || value.isJsonNull()) {
            return fallback;
        }
        if (!value.isJsonPrimitive() || !value.getAsJsonPrimitive().isBoolean()) {
            throw ApiException.invalid(field, "expected true or false, got " + value);
        }
        return value.getAsBoolean();
    }

    static BigDecimal decimal(JsonObject body, String field) {
        JsonElement value = body.get(field);
        if (value == null || value.isJsonNull()) {
            return null;
        }
        if (!value.isJsonPrimitive() || !value.getAsJsonPrimitive().isNumber()) {
            throw ApiException.invalid(field, "expected a number, got " + value);
        }
        try {
            return ((JsonPrimitive) value).getAsBigDecimal();
        } catch (NumberFormatException e) {
            throw ApiException.invalid(field, "expected a number, got " + value);
        }
    }

    static Double number(JsonObject body, String field, double min, double max) {
        BigDecimal value = decimal(body, field);
        if (value == null) {
            return null;
        }
        double d = value.doubleValue();
        if (!(d >= min && d <= max)) {
            throw ApiException.invalid(
                    field, field + " must be in [" + min + ", " + max + "], got " + value);
        }
        return d;
    }

    static Integer integer(JsonObject body, String field, int min, int max) {
        Long value = longValue(body, field);
        if (value == null) {
            return null;
        }
        if (value < min || value > max) {
            throw ApiException.invalid(
                    field,
                    field + " must be an integer in [" + min + ", " + max + "], got " + value);
        }
        return value.intValue();
    }

    static Long longValue(JsonObject body, String field) {
        BigDecimal value = decimal(body, field);
        if (value == null) {
            return null;
        }
        try {
            return value.longValueExact();
        } catch (ArithmeticException e) {
            throw ApiException.invalid(field, field + " must be an integer, got " + value);
        }
    }
}
