package io.github.djlllmzoo.constrained;

import java.util.ArrayList;
import java.util.List;

/**
 * The pieces of JSON text every schema is built from, in one {@link Grammar}: bounded white space,
 * string characters, numbers (integer ranges exactly), and any JSON value, object or array (as
 * rules, made once and called).
 *
 * <p>Numbers are bounded in length so a model cannot write digits forever: at most {@value
 * #MAX_DIGITS} integer digits, {@value #MAX_DIGITS} fraction digits, a 3-digit exponent.
 */
final class JsonGrammar {

    /** Indentation after a newline between two JSON tokens, at most (llama.cpp allows 20 too). */
    static final int MAX_INDENT = 20;

    /** Digits of an unbounded integer part, or of a fraction, at most. */
    static final int MAX_DIGITS = 15;

    private static final String FRACTION = "\\.\\d{0," + (MAX_DIGITS - 1) + "}[1-9]";
    private static final String NUMBER =
            "-?(?:0|[1-9]\\d{0," + (MAX_DIGITS - 1) + "})(?:\\.\\d{1," + MAX_DIGITS + "})?(?:[eE][+-]?\\d{1,2})?";

    private final Grammar g;
    private int anyValue = -1;
    private int anyObject = -1;
    private int anyArray = -1;

    JsonGrammar(Grammar g) {
        this.g = g;
    }

    Grammar grammar() {
        return g;
    }

    /** @return nothing, one space, or a newline and up to {@value #MAX_INDENT} spaces or tabs */
    Grammar.Fragment ws() {
        Grammar.Fragment indent = g.repeat(() -> g.alt(g.text(" "), g.text("\t")), 0, MAX_INDENT);
        return g.optional(g.alt(g.text(" "), g.seq(g.text("\n"), indent)));
    }

    /** @return one character of a JSON string: any character, escaped where JSON requires */
    Grammar.Fragment stringChar() {
        return CharClass.ANY.toFragment(g, true);
    }

    /** @return any JSON string */
    Grammar.Fragment anyString() {
        return g.seq(g.text("\""), g.star(stringChar()), g.text("\""));
    }

    /** @return any JSON number (bounded in length) */
    Grammar.Fragment anyNumber() {
        return regex(NUMBER);
    }

    Grammar.Fragment regex(String pattern) {
        return new RegexPattern(pattern, "json").toFragment(g, false);
    }

    /**
     * @param lo the least value, or {@code null}
     * @param hi the greatest value, or {@code null}
     * @return an integer in {@code [lo, hi]} without leading zeros or {@code -0}
     */
    Grammar.Fragment integer(Long lo, Long hi) {
        return regex(integerRegex(lo, hi));
    }

    /**
     * A number in {@code [lo, hi]} (either may be open) for integer bounds: an integer in range, or
     * a fraction (its last digit not 0, so it never equals its integer part) whose integer part
     * keeps it strictly inside; no exponent.
     *
     * @param intLo the least integer value allowed
     * @param intHi the greatest integer value allowed
     * @param lo the lower bound ({@code null}: none); a fraction may come within 1 of it
     * @param hi the upper bound ({@code null}: none)
     * @return the fragment
     */
    Grammar.Fragment boundedNumber(Long intLo, Long intHi, Long lo, Long hi) {
        List<String> options = new ArrayList<>();
        if (intLo == null || intHi == null || intLo <= intHi) {
            options.add(integerRegex(intLo, intHi));
        }
        // x.f in (x, x + 1) for x >= 0: needs lo <= x and x + 1 <= hi.
        long posLo = lo == null ? 0 : Math.max(0, lo);
        if (hi == null || posLo <= hi - 1) {
            options.add("(?:" + nonNegativeRegex(posLo, hi == null ? null : hi - 1) + ")" + FRACTION);
        }
        // -m.f in (-(m + 1), -m) for m >= 0: needs lo <= -(m + 1) and -m <= hi.
        long negLo = hi == null ? 0 : Math.max(0, -hi);
        if (lo == null || negLo <= -lo - 1) {
            options.add("-(?:" + nonNegativeRegex(negLo, lo == null ? null : -lo - 1) + ")" + FRACTION);
        }
        if (options.isEmpty()) {
            throw new IllegalArgumentException("empty range");
        }
        return regex(String.join("|", options));
    }

    /** @return the rule of any JSON value */
    int anyValueRule() {
        if (anyValue < 0) {
            anyValue = g.newRule();
            g.define(
                    anyValue,
                    g.alt(
                            g.call(anyObjectRule()),
                            g.call(anyArrayRule()),
                            anyString(),
                            anyNumber(),
                            g.text("true"),
                            g.text("false"),
                            g.text("null")));
        }
        return anyValue;
    }

    /** @return the rule of any JSON object */
    int anyObjectRule() {
        if (anyObject < 0) {
            anyObject = g.newRule();
            g.define(anyObject, map(() -> g.call(anyValueRule())));
        }
        return anyObject;
    }

    /** @return the rule of any JSON array */
    int anyArrayRule() {
        if (anyArray < 0) {
            anyArray = g.newRule();
            int value = anyValueRule();
            g.define(anyArray, list(() -> g.call(value), 0, Integer.MAX_VALUE));
        }
        return anyArray;
    }

    /**
     * @param value makes a value fragment
     * @return an object with any keys, each value made by {@code value}
     */
    Grammar.Fragment map(java.util.function.Supplier<Grammar.Fragment> value) {
        int pair = g.newRule();
        g.define(pair, g.seq(anyString(), ws(), g.text(":"), ws(), value.get()));
        return list("{", "}", () -> g.call(pair), 0, Integer.MAX_VALUE);
    }

    /**
     * @param item makes one item's fragment (a call, so copies stay small)
     * @param min the fewest items
     * @param max the most items ({@link Integer#MAX_VALUE}: any)
     * @return an array of items
     */
    Grammar.Fragment list(java.util.function.Supplier<Grammar.Fragment> item, int min, int max) {
        return list("[", "]", item, min, max);
    }

    /** {@code open ws (items ws)? close}: one white-space site between two tokens, never two. */
    private Grammar.Fragment list(
            String open, String close, java.util.function.Supplier<Grammar.Fragment> item, int min, int max) {
        Grammar.Fragment body;
        if (max == 0) {
            body = g.empty();
        } else {
            Grammar.Fragment items =
                    g.seq(
                            item.get(),
                            g.repeat(
                                    () -> g.seq(ws(), g.text(","), ws(), item.get()),
                                    Math.max(min - 1, 0),
                                    max == Integer.MAX_VALUE ? max : max - 1),
                            ws());
            body = min == 0 ? g.optional(items) : items;
        }
        return g.seq(g.text(open), ws(), body, g.text(close));
    }

    // ---- integer ranges as regular expressions ----

    static String integerRegex(Long lo, Long hi) {
        List<String> options = new ArrayList<>();
        // Negative values in [lo, min(hi, -1)]: "-" and a magnitude in [max(1, -min(hi, -1)), -lo].
        long negHi = hi == null ? -1 : Math.min(hi, -1);
        if (lo == null || lo <= negHi) {
            options.add("-(?:" + nonNegativeRegex(Math.max(1, -negHi), lo == null ? null : -lo) + ")");
        }
        long posLo = lo == null ? 0 : Math.max(lo, 0);
        if (hi == null || posLo <= hi) {
            options.add(nonNegativeRegex(posLo, hi));
        }
        if (options.isEmpty()) {
            throw new IllegalArgumentException("empty range");
        }
        return String.join("|", options);
    }

    /** Integers in {@code [a, b]}, {@code a >= 0}; {@code b == null}: up to {@value #MAX_DIGITS} digits. */
    static String nonNegativeRegex(long a, Long b) {
        String from = Long.toString(a);
        List<String> options = new ArrayList<>();
        int maxLength = b == null ? Math.max(MAX_DIGITS, from.length()) : Long.toString(b).length();
        for (int n = from.length(); n <= maxLength; n++) {
            long lowest = n == 1 ? 0 : pow10(n - 1);
            long highest = n >= 19 ? Long.MAX_VALUE : pow10(n) - 1;
            long x = Math.max(a, lowest);
            long y = b == null ? highest : Math.min(b, highest);
            if (x <= y) {
                options.add(sameLength(pad(x, n), pad(y, n)));
            }
        }
        return String.join("|", options);
    }

    private static long pow10(int n) {
        long p = 1;
        for (int i = 0; i < n; i++) {
            p *= 10;
        }
        return p;
    }

    private static String pad(long v, int n) {
        String s = Long.toString(v);
        return "0".repeat(n - s.length()) + s;
    }

    /** Decimal strings of one length in {@code [x, y]}. */
    private static String sameLength(String x, String y) {
        if (x.isEmpty()) {
            return "";
        }
        if (x.equals(y)) {
            return x;
        }
        int r = x.length() - 1;
        char xd = x.charAt(0);
        char yd = y.charAt(0);
        if (xd == yd) {
            return xd + "(?:" + sameLength(x.substring(1), y.substring(1)) + ")";
        }
        String zeros = "0".repeat(r);
        String nines = "9".repeat(r);
        List<String> options = new ArrayList<>();
        char midLo = xd;
        if (!x.substring(1).equals(zeros)) {
            options.add(xd + "(?:" + sameLength(x.substring(1), nines) + ")");
            midLo = (char) (xd + 1);
        }
        char midHi = yd;
        String last = null;
        if (!y.substring(1).equals(nines)) {
            last = yd + "(?:" + sameLength(zeros, y.substring(1)) + ")";
            midHi = (char) (yd - 1);
        }
        if (midLo <= midHi) {
            options.add("[" + midLo + "-" + midHi + "]" + (r > 0 ? "\\d{" + r + "}" : ""));
        }
        if (last != null) {
            options.add(last);
        }
        return String.join("|", options);
    }
}
