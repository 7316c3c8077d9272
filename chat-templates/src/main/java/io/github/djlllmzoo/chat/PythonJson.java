package io.github.djlllmzoo.chat;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The {@code tojson} filter of Hugging Face's chat templates: Python's {@code json.dumps(x,
 * ensure_ascii=False, indent=None, separators=None, sort_keys=False)}, each of the four settable
 * by position or keyword as transformers' filter allows. Jinjava's own {@code tojson} writes
 * compact JSON ({@code {"a":1}}); Python separates items by {@code ", "} and keys by {@code ": "}
 * ({@code ","} between items when indenting), and prints floats as {@code repr} does.
 */
final class PythonJson implements Filter {

    private static final List<String> PARAMETERS =
            List.of("ensure_ascii", "indent", "separators", "sort_keys");

    @Override
    public String getName() {
        return "tojson";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
        return filter(var, interpreter, args, Map.of());
    }

    @Override
    public Object filter(
            Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
        Object[] settings = new Object[PARAMETERS.size()];
        for (int i = 0; i < args.length; i++) {
            if (i >= settings.length) {
                throw new IllegalArgumentException(
                        "tojson takes at most " + settings.length + " arguments, got "
                                + args.length);
            }
            settings[i] = args[i];
        }
        for (Map.Entry<String, Object> e : kwargs.entrySet()) {
            int at = PARAMETERS.indexOf(e.getKey());
            if (at < 0) {
                throw new IllegalArgumentException(
                        "tojson has no argument '" + e.getKey() + "'; it takes " + PARAMETERS);
            }
            settings[at] = e.getValue();
        }
        String indent = indent(settings[1]);
        String itemSeparator = indent == null ? ", " : ",";
        String keySeparator = ": ";
        if (settings[2] != null) {
            List<?> pair = settings[2] instanceof List<?> list ? list : List.of();
            if (pair.size() != 2) {
                throw new IllegalArgumentException(
                        "tojson separators must be (item_separator, key_separator), got "
                                + PythonStr.str(settings[2]));
            }
            itemSeparator = String.valueOf(pair.get(0));
            keySeparator = String.valueOf(pair.get(1));
        }
        Writer writer =
                new Writer(
                        truthy(settings[0]),
                        indent,
                        itemSeparator,
                        keySeparator,
                        truthy(settings[3]));
        StringBuilder out = new StringBuilder();
        writer.write(var, 0, out);
        return out.toString();
    }

    /** Python's {@code indent}: a number of spaces or a string per level, None for one line. */
    private static String indent(Object indent) {
        if (indent == null) {
            return null;
        }
        if (indent instanceof Number n) {
            return " ".repeat(Math.max(0, n.intValue()));
        }
        return indent.toString();
    }

    private static boolean truthy(Object value) {
        return value instanceof Boolean b ? b : value != null && !"".equals(value);
    }

    /** One {@code json.dumps} call's settings. */
    private record Writer(
            boolean ensureAscii,
            String indent,
            String itemSeparator,
            String keySeparator,
            boolean sortKeys) {

        void write(Object value, int level, StringBuilder out) {
            if (value == null) {
                out.append("null");
            } else if (value instanceof Boolean b) {
                out.append(b ? "true" : "false");
            } else if (value instanceof String s) {
                string(s, out);
            } else if (value instanceof Double || value instanceof Float) {
                double d = ((Number) value).doubleValue();
                out.append(
                        Double.isNaN(d)
                                ? "NaN"
                                : Double.isInfinite(d)
                                        ? (d > 0 ? "Infinity" : "-Infinity")
                                        : PythonStr.floatRepr(d));
            } else if (value instanceof Number n) {
                out.append(n);
            } else if (value instanceof Map<?, ?> map) {
                List<Map.Entry<String, ?>> entries = new ArrayList<>();
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    entries.add(new AbstractMap.SimpleEntry<>(key(e.getKey()), e.getValue()));
                }
                if (sortKeys) {
                    entries.sort(Comparator.comparing(Map.Entry::getKey));
                }
                List<String> keys = new ArrayList<>();
                List<Object> values = new ArrayList<>();
                for (Map.Entry<String, ?> e : entries) {
                    keys.add(e.getKey());
                    values.add(e.getValue());
                }
                container('{', '}', keys, values, level, out);
            } else if (value instanceof Iterable<?> items) {
                List<Object> values = new ArrayList<>();
                items.forEach(values::add);
                container('[', ']', null, values, level, out);
            } else {
                throw new IllegalArgumentException(
                        "Object of type "
                                + value.getClass().getSimpleName()
                                + " is not JSON serializable");
            }
        }

        /** An object ({@code keys} given, one per value) or an array ({@code keys} null). */
        private void container(
                char open,
                char close,
                List<String> keys,
                List<?> items,
                int level,
                StringBuilder out) {
            if (items.isEmpty()) {
                out.append(open).append(close);
                return;
            }
            out.append(open);
            for (int i = 0; i < items.size(); i++) {
                if (i > 0) {
                    out.append(itemSeparator);
                }
                newline(level + 1, out);
                if (keys != null) {
                    string(keys.get(i), out);
                    out.append(keySeparator);
                }
                write(items.get(i), level + 1, out);
            }
            newline(level, out);
            out.append(close);
        }

        private void newline(int level, StringBuilder out) {
            if (indent != null) {
                out.append('\n').append(indent.repeat(level));
            }
        }

        /** Python converts keys that are not strings: numbers and booleans as JSON writes them. */
        private String key(Object key) {
            if (key instanceof String s) {
                return s;
            }
            if (key == null || key instanceof Boolean || key instanceof Number) {
                StringBuilder out = new StringBuilder();
                write(key, 0, out);
                return out.toString();
            }
            throw new IllegalArgumentException(
                    "keys must be str, int, float, bool or None, not "
                            + key.getClass().getSimpleName());
        }

        /** A JSON string as Python's encoder escapes it. */
        private void string(String s, StringBuilder out) {
            out.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"' -> out.append("\\\"");
                    case '\\' -> out.append("\\\\");
                    case '\n' -> out.append("\\n");
                    case '\r' -> out.append("\\r");
                    case '\t' -> out.append("\\t");
                    case '\b' -> out.append("\\b");
                    case '\f' -> out.append("\\f");
                    default -> {
                        if (c < 0x20 || (ensureAscii && c > 0x7e)) {
                            out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                        } else {
                            out.append(c);
                        }
                    }
                }
            }
            out.append('"');
        }
    }
}
