package io.github.djlllmzoo.server;

import java.util.Iterator;
import java.util.Locale;
import java.util.Map;

/**
 * What Jinja2 prints for a value, {@code str(value)} in Python: {@code True}/{@code False}, lists
 * and dicts in Python's notation ({@code ['a', 1]}, {@code {'k': 'v'}}), integral numbers without
 * a fraction. Jinjava prints {@code true} and Java's notation; {@link Jinja2Syntax} routes every
 * output tag through {@link #str}. A missing value prints nothing, as an undefined one does in
 * Jinja2 (Jinjava cannot tell an undefined value from {@code none}).
 */
public final class PythonStr {

    private PythonStr() {}

    /**
     * @param value a template value
     * @return its text as Jinja2 prints it
     */
    public static String str(Object value) {
        if (value == null) {
            return "";
        }
        return value instanceof String s ? s : repr(value);
    }

    private static String repr(Object value) {
        if (value == null) {
            return "None";
        }
        if (value instanceof Boolean b) {
            return b ? "True" : "False";
        }
        if (value instanceof String s) {
            return "'" + s.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'";
        }
        if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            return d == Math.rint(d) && !Double.isInfinite(d)
                    ? String.format(Locale.ROOT, "%.1f", d)
                    : Double.toString(d);
        }
        if (value instanceof Map<?, ?> map) {
            StringBuilder out = new StringBuilder("{");
            for (Map.Entry<?, ?> e : map.entrySet()) {
                out.append(out.length() > 1 ? ", " : "")
                        .append(repr(e.getKey()))
                        .append(": ")
                        .append(repr(e.getValue()));
            }
            return out.append('}').toString();
        }
        if (value instanceof Iterable<?> items) {
            StringBuilder out = new StringBuilder("[");
            for (Iterator<?> it = items.iterator(); it.hasNext(); ) {
                out.append(repr(it.next())).append(it.hasNext() ? ", " : "");
            }
            return out.append(']').toString();
        }
        return value.toString();
    }
}
