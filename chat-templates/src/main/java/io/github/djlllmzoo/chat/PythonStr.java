package io.github.djlllmzoo.chat;

import java.math.BigDecimal;
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

    /**
     * Python's {@code repr} of a finite float: the shortest digits that read back as the value,
     * positional from 1e-4 to below 1e16 ({@code 0.0001}, {@code 2.5}, {@code 1e+16}, {@code
     * 1e-05}), always with a fraction or an exponent.
     *
     * @param d a finite value
     * @return its text
     */
    static String floatRepr(double d) {
        if (d == 0) {
            return 1 / d < 0 ? "-0.0" : "0.0";
        }
        BigDecimal exact = new BigDecimal(Double.toString(d)).stripTrailingZeros();
        String digits = exact.unscaledValue().abs().toString();
        int exponent = digits.length() - 1 - exact.scale(); // of the first digit
        String sign = d < 0 ? "-" : "";
        if (exponent < -4 || exponent >= 16) {
            String mantissa =
                    digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
            return sign
                    + mantissa
                    + String.format(
                            Locale.ROOT, "e%s%02d", exponent < 0 ? "-" : "+", Math.abs(exponent));
        }
        String plain = exact.abs().toPlainString();
        return sign + (plain.contains(".") ? plain : plain + ".0");
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
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                return Double.isNaN(d) ? "nan" : d > 0 ? "inf" : "-inf";
            }
            return floatRepr(d);
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
