package io.github.djlllmzoo.constrained;

import java.util.ArrayList;
import java.util.List;

/**
 * A set of Unicode code points as sorted, disjoint, non-adjacent ranges, never holding a surrogate
 * (those are not characters of a UTF-8 text). Immutable.
 */
final class CharClass {

    static final int MAX = 0x10FFFF;
    private static final int SURROGATE_LO = 0xD800;
    private static final int SURROGATE_HI = 0xDFFF;

    /** Every character. */
    static final CharClass ANY = range(0, MAX);
    /** {@code \d}. */
    static final CharClass DIGIT = range('0', '9');
    /** {@code \w}: ASCII letters, digits and underscore, as Java's default. */
    static final CharClass WORD = range('a', 'z').union(range('A', 'Z')).union(DIGIT).union(of('_'));
    /** {@code \s}: ASCII white space, as Java's default. */
    static final CharClass SPACE = of(' ', '\t', '\n', 0x0B, '\f', '\r');

    /** lo0, hi0, lo1, hi1, ... */
    private final int[] bounds;

    private CharClass(int[] bounds) {
        this.bounds = bounds;
    }

    static CharClass range(int lo, int hi) {
        return normalized(List.of(new int[] {lo, hi}));
    }

    static CharClass of(int... chars) {
        List<int[]> ranges = new ArrayList<>();
        for (int c : chars) {
            ranges.add(new int[] {c, c});
        }
        return normalized(ranges);
    }

    private static CharClass normalized(List<int[]> input) {
        List<int[]> ranges = new ArrayList<>();
        for (int[] r : input) {
            // Take the surrogates out.
            if (r[0] < SURROGATE_LO && r[1] >= SURROGATE_LO) {
                ranges.add(new int[] {r[0], SURROGATE_LO - 1});
                if (r[1] > SURROGATE_HI) {
                    ranges.add(new int[] {SURROGATE_HI + 1, r[1]});
                }
            } else if (r[0] >= SURROGATE_LO && r[0] <= SURROGATE_HI) {
                if (r[1] > SURROGATE_HI) {
                    ranges.add(new int[] {SURROGATE_HI + 1, r[1]});
                }
            } else if (r[0] <= r[1]) {
                ranges.add(r);
            }
        }
        ranges.sort((a, b) -> Integer.compare(a[0], b[0]));
        List<int[]> merged = new ArrayList<>();
        for (int[] r : ranges) {
            int[] last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
            if (last != null && r[0] <= last[1] + 1) {
                last[1] = Math.max(last[1], r[1]);
            } else {
                merged.add(new int[] {r[0], r[1]});
            }
        }
        int[] bounds = new int[merged.size() * 2];
        for (int i = 0; i < merged.size(); i++) {
            bounds[2 * i] = merged.get(i)[0];
            bounds[2 * i + 1] = merged.get(i)[1];
        }
        return new CharClass(bounds);
    }

    List<int[]> ranges() {
        List<int[]> out = new ArrayList<>();
        for (int i = 0; i < bounds.length; i += 2) {
            out.add(new int[] {bounds[i], bounds[i + 1]});
        }
        return out;
    }

    boolean isEmpty() {
        return bounds.length == 0;
    }

    boolean contains(int c) {
        for (int i = 0; i < bounds.length; i += 2) {
            if (c >= bounds[i] && c <= bounds[i + 1]) {
                return true;
            }
        }
        return false;
    }

    CharClass union(CharClass other) {
        List<int[]> all = ranges();
        all.addAll(other.ranges());
        return normalized(all);
    }

    CharClass complement() {
        List<int[]> out = new ArrayList<>();
        int next = 0;
        for (int i = 0; i < bounds.length; i += 2) {
            if (bounds[i] > next) {
                out.add(new int[] {next, bounds[i] - 1});
            }
            next = bounds[i + 1] + 1;
        }
        if (next <= MAX) {
            out.add(new int[] {next, MAX});
        }
        return normalized(out);
    }

    CharClass minus(CharClass other) {
        return complement().union(other).complement();
    }

    CharClass intersect(CharClass other) {
        return complement().union(other.complement()).complement();
    }

    // ---- to bytes ----

    /**
     * The fragment matching the UTF-8 encoding of any one character of this class.
     *
     * @param g the grammar to build in
     * @param jsonEscaped whether the characters stand inside a JSON string, where {@code "}, {@code
     *     \} and control characters are written as escapes
     */
    Grammar.Fragment toFragment(Grammar g, boolean jsonEscaped) {
        List<Grammar.Fragment> choices = new ArrayList<>();
        CharClass raw = this;
        if (jsonEscaped) {
            CharClass escaped = intersect(range(0, 0x1F).union(of('"', '\\')));
            raw = minus(escaped);
            for (int[] r : escaped.ranges()) {
                for (int c = r[0]; c <= r[1]; c++) {
                    choices.add(g.text(jsonEscape(c)));
                }
            }
        }
        for (int[] r : raw.ranges()) {
            for (int[] split : byLength(r[0], r[1])) {
                utf8Sequences(g, split[0], split[1], choices);
            }
        }
        if (choices.isEmpty()) {
            throw new IllegalStateException("an empty character class matches nothing");
        }
        return g.alt(choices);
    }

    /** The JSON string escape of a character that must be escaped. */
    static String jsonEscape(int c) {
        switch (c) {
            case '"':
                return "\\\"";
            case '\\':
                return "\\\\";
            case '\b':
                return "\\b";
            case '\f':
                return "\\f";
            case '\n':
                return "\\n";
            case '\r':
                return "\\r";
            case '\t':
                return "\\t";
            default:
                return String.format("\\u%04x", c);
        }
    }

    private static List<int[]> byLength(int lo, int hi) {
        int[] limits = {0x7F, 0x7FF, 0xFFFF, MAX};
        List<int[]> out = new ArrayList<>();
        int start = lo;
        for (int limit : limits) {
            if (start > hi) {
                break;
            }
            if (start <= limit) {
                out.add(new int[] {start, Math.min(hi, limit)});
                start = limit + 1;
            }
        }
        return out;
    }

    /**
     * Adds byte-range sequences for {@code [lo, hi]} (one encoded length): split until every
     * continuation byte ranges fully or the range shares its leading bytes.
     */
    private static void utf8Sequences(Grammar g, int lo, int hi, List<Grammar.Fragment> out) {
        int n = encode(lo).length;
        for (int i = 1; i < n; i++) {
            int m = (1 << (6 * i)) - 1;
            if ((lo & ~m) != (hi & ~m)) {
                if ((lo & m) != 0) {
                    utf8Sequences(g, lo, lo | m, out);
                    utf8Sequences(g, (lo | m) + 1, hi, out);
                    return;
                }
                if ((hi & m) != m) {
                    utf8Sequences(g, lo, (hi & ~m) - 1, out);
                    utf8Sequences(g, hi & ~m, hi, out);
                    return;
                }
            }
        }
        byte[] a = encode(lo);
        byte[] b = encode(hi);
        List<Grammar.Fragment> parts = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            parts.add(g.bytes(a[k] & 0xFF, b[k] & 0xFF));
        }
        out.add(g.seq(parts));
    }

    private static byte[] encode(int c) {
        return new String(Character.toChars(c)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
}
