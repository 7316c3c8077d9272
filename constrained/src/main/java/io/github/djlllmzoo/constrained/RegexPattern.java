package io.github.djlllmzoo.constrained;

import java.util.ArrayList;
import java.util.List;

/**
 * A regular expression parsed into a tree, compiled into a {@link Grammar} fragment that matches
 * exactly the texts the expression matches in full. The syntax is a subset of Java's: literals and
 * escapes ({@code \. \\ \n \t \r \f}, and a backslash, u and four hex digits), classes {@code [a-z_]} and {@code [^...]}, {@code
 * .} (any character but a newline), {@code \d \w \s \D \W \S}, groups {@code (...)} and {@code
 * (?:...)}, alternation {@code |}, quantifiers {@code * + ? {n} {n,} {n,m}} (a lazy or possessive
 * suffix is accepted and changes nothing: only the set of texts matters), and {@code ^} / {@code
 * $} at the ends. Anything else (backreferences, lookaround, flags, named classes) is refused with
 * an {@link InvalidConstraintException} naming its position.
 */
final class RegexPattern {

    /** A node of the expression tree. */
    private sealed interface Node {}

    private record Chars(CharClass set) implements Node {}

    private record Concat(List<Node> parts) implements Node {}

    private record Choice(List<Node> options) implements Node {}

    private record Repeat(Node node, int min, int max) implements Node {}

    /** The most copies a bounded quantifier may ask for, so a pattern cannot blow the grammar up. */
    private static final int MAX_REPEAT = 10_000;

    private final String pattern;
    private final String where;
    private final Node root;
    private final boolean anchoredStart;
    private final boolean anchoredEnd;
    private int pos;

    /**
     * @param pattern the expression
     * @param where where it comes from, for messages (e.g. a schema's JSON path)
     * @throws InvalidConstraintException if the expression is outside the supported syntax
     */
    RegexPattern(String pattern, String where) {
        this.pattern = pattern;
        this.where = where;
        boolean start = pattern.startsWith("^");
        pos = start ? 1 : 0;
        Node parsed = alternation();
        boolean end = false;
        if (pos < pattern.length() && pattern.charAt(pos) == '$' && pos == pattern.length() - 1) {
            end = true;
            pos++;
        }
        if (pos != pattern.length()) {
            throw error("unexpected '" + pattern.charAt(pos) + "'");
        }
        this.root = parsed;
        this.anchoredStart = start;
        this.anchoredEnd = end;
    }

    /** @return whether the expression starts with {@code ^} */
    boolean anchoredStart() {
        return anchoredStart;
    }

    /** @return whether the expression ends with {@code $} */
    boolean anchoredEnd() {
        return anchoredEnd;
    }

    /**
     * @param g the grammar to build in
     * @param jsonEscaped whether the text stands inside a JSON string (so {@code "}, {@code \} and
     *     control characters are written escaped)
     * @return a fragment matching the texts the expression matches in full
     */
    Grammar.Fragment toFragment(Grammar g, boolean jsonEscaped) {
        return build(g, root, jsonEscaped);
    }

    private static Grammar.Fragment build(Grammar g, Node node, boolean json) {
        if (node instanceof Chars c) {
            return c.set().toFragment(g, json);
        } else if (node instanceof Concat c) {
            List<Grammar.Fragment> parts = new ArrayList<>();
            for (Node p : c.parts()) {
                parts.add(build(g, p, json));
            }
            return g.seq(parts);
        } else if (node instanceof Choice c) {
            List<Grammar.Fragment> options = new ArrayList<>();
            for (Node o : c.options()) {
                options.add(build(g, o, json));
            }
            return g.alt(options);
        } else {
            Repeat r = (Repeat) node;
            return g.repeat(() -> build(g, r.node(), json), r.min(), r.max());
        }
    }

    private InvalidConstraintException error(String what) {
        return new InvalidConstraintException(
                where, "regular expression /" + pattern + "/ at position " + pos + ": " + what);
    }

    private boolean more() {
        return pos < pattern.length();
    }

    private char peek() {
        return pattern.charAt(pos);
    }

    private Node alternation() {
        List<Node> options = new ArrayList<>();
        options.add(concatenation());
        while (more() && peek() == '|') {
            pos++;
            options.add(concatenation());
        }
        return options.size() == 1 ? options.get(0) : new Choice(options);
    }

    private Node concatenation() {
        List<Node> parts = new ArrayList<>();
        while (more() && peek() != '|' && peek() != ')') {
            if (peek() == '$' && pos == pattern.length() - 1) {
                break;
            }
            parts.add(quantified(atom()));
        }
        return parts.size() == 1 ? parts.get(0) : new Concat(parts);
    }

    private Node quantified(Node atom) {
        while (more()) {
            char c = peek();
            int min;
            int max;
            if (c == '*') {
                min = 0;
                max = Integer.MAX_VALUE;
                pos++;
            } else if (c == '+') {
                min = 1;
                max = Integer.MAX_VALUE;
                pos++;
            } else if (c == '?') {
                min = 0;
                max = 1;
                pos++;
            } else if (c == '{' && pos + 1 < pattern.length() && Character.isDigit(pattern.charAt(pos + 1))) {
                pos++;
                min = number();
                max = min;
                if (more() && peek() == ',') {
                    pos++;
                    max = more() && Character.isDigit(peek()) ? number() : Integer.MAX_VALUE;
                }
                expect('}');
                if (max < min || (max != Integer.MAX_VALUE && max > MAX_REPEAT) || min > MAX_REPEAT) {
                    throw error("repetition {" + min + "," + max + "} is out of order or above " + MAX_REPEAT);
                }
            } else {
                return atom;
            }
            if (more() && (peek() == '?' || peek() == '+')) {
                pos++; // lazy or possessive: the same set of texts
            }
            atom = new Repeat(atom, min, max);
        }
        return atom;
    }

    private int number() {
        int start = pos;
        while (more() && Character.isDigit(peek())) {
            pos++;
        }
        try {
            return Integer.parseInt(pattern.substring(start, pos));
        } catch (NumberFormatException e) {
            throw error("repetition count too large");
        }
    }

    private void expect(char c) {
        if (!more() || peek() != c) {
            throw error("expected '" + c + "'");
        }
        pos++;
    }

    private Node atom() {
        char c = peek();
        switch (c) {
            case '(':
                pos++;
                if (pattern.startsWith("?:", pos)) {
                    pos += 2;
                } else if (more() && peek() == '?') {
                    throw error("lookaround, named groups and flags are not supported");
                }
                Node inner = alternation();
                expect(')');
                return inner;
            case '[':
                return new Chars(bracket());
            case '.':
                pos++;
                return new Chars(CharClass.ANY.minus(CharClass.of('\n')));
            case '\\':
                return new Chars(escape());
            case '*':
            case '+':
            case '?':
            case '{':
                throw error("quantifier with nothing to repeat");
            case '^':
                throw error("'^' is supported only at the start");
            case '$':
                throw error("'$' is supported only at the end");
            default:
                int cp = pattern.codePointAt(pos);
                pos += Character.charCount(cp);
                return new Chars(CharClass.of(cp));
        }
    }

    private CharClass bracket() {
        expect('[');
        boolean negated = more() && peek() == '^';
        if (negated) {
            pos++;
        }
        CharClass set = CharClass.of();
        boolean first = true;
        while (more() && (peek() != ']' || first)) {
            first = false;
            CharClass item;
            int lo;
            if (peek() == '\\') {
                item = escape();
                lo = single(item);
            } else if (peek() == '[') {
                throw error("nested classes and class operations are not supported");
            } else {
                lo = pattern.codePointAt(pos);
                pos += Character.charCount(lo);
                item = CharClass.of(lo);
            }
            if (lo >= 0 && pos + 1 < pattern.length() && peek() == '-' && pattern.charAt(pos + 1) != ']') {
                pos++;
                int hi;
                if (peek() == '\\') {
                    hi = single(escape());
                } else {
                    hi = pattern.codePointAt(pos);
                    pos += Character.charCount(hi);
                }
                if (hi < lo) {
                    throw error("range out of order");
                }
                item = CharClass.range(lo, hi);
            }
            set = set.union(item);
        }
        expect(']');
        return negated ? set.complement() : set;
    }

    /** The one character of a class, or -1 when it has several (it cannot start a range). */
    private static int single(CharClass c) {
        List<int[]> r = c.ranges();
        return r.size() == 1 && r.get(0)[0] == r.get(0)[1] ? r.get(0)[0] : -1;
    }

    private CharClass escape() {
        expect('\\');
        if (!more()) {
            throw error("pattern ends in a backslash");
        }
        char c = peek();
        pos++;
        switch (c) {
            case 'd':
                return CharClass.DIGIT;
            case 'D':
                return CharClass.DIGIT.complement();
            case 'w':
                return CharClass.WORD;
            case 'W':
                return CharClass.WORD.complement();
            case 's':
                return CharClass.SPACE;
            case 'S':
                return CharClass.SPACE.complement();
            case 'n':
                return CharClass.of('\n');
            case 't':
                return CharClass.of('\t');
            case 'r':
                return CharClass.of('\r');
            case 'f':
                return CharClass.of('\f');
            case 'u':
                if (pos + 4 > pattern.length()) {
                    throw error("\\u needs four hex digits");
                }
                try {
                    int cp = Integer.parseInt(pattern.substring(pos, pos + 4), 16);
                    pos += 4;
                    return CharClass.of(cp);
                } catch (NumberFormatException e) {
                    throw error("\\u needs four hex digits");
                }
            default:
                if (Character.isLetterOrDigit(c)) {
                    throw error("escape \\" + c + " is not supported");
                }
                return CharClass.of(c);
        }
    }
}
