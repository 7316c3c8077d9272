package io.github.djlllmzoo.constrained;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * A byte-level recursive transition network: numbered states joined by byte-range edges, empty
 * edges, calls of rules (each rule a start state and an end state; a call pushes the state to
 * return to) and literal edges that one atomic token (a special or added token whose text is that
 * literal) may take. Rule 0 is the whole output. Built through {@link Fragment}s, then read by
 * {@link MatcherState}; not modified once a {@link CompiledConstraint} holds it.
 */
final class Grammar {

    /** A piece of the network with one way in and one way out. */
    record Fragment(int start, int end) {}

    private final List<Edges> states = new ArrayList<>();
    private final List<int[]> rules = new ArrayList<>();

    /** The out-edges of one state, in parallel lists. */
    static final class Edges {
        final IntList lo = new IntList();
        final IntList hi = new IntList();
        final IntList byteTarget = new IntList();
        final IntList epsilon = new IntList();
        final IntList callRule = new IntList();
        final IntList callReturn = new IntList();
        final List<String> literal = new ArrayList<>();
        final IntList literalTarget = new IntList();
        int endOfRule = -1;

        boolean consumes() {
            return lo.size() > 0 || literalTarget.size() > 0;
        }
    }

    /** A growable int array. */
    static final class IntList {
        private int[] values = new int[2];
        private int size;

        void add(int v) {
            if (size == values.length) {
                values = java.util.Arrays.copyOf(values, size * 2);
            }
            values[size++] = v;
        }

        int get(int i) {
            return values[i];
        }

        int size() {
            return size;
        }
    }

    Grammar() {
        newRule(); // rule 0: the whole output
    }

    int stateCount() {
        return states.size();
    }

    Edges edges(int state) {
        return states.get(state);
    }

    int ruleCount() {
        return rules.size();
    }

    int ruleStart(int rule) {
        return rules.get(rule)[0];
    }

    int ruleEnd(int rule) {
        return rules.get(rule)[1];
    }

    /** @return a new rule's id; its body is given later with {@link #define} */
    int newRule() {
        int start = newState();
        int end = newState();
        int id = rules.size();
        rules.add(new int[] {start, end});
        states.get(end).endOfRule = id;
        return id;
    }

    /** Makes {@code body} the rule's whole text. */
    void define(int rule, Fragment body) {
        epsilon(ruleStart(rule), body.start());
        epsilon(body.end(), ruleEnd(rule));
    }

    int newState() {
        states.add(new Edges());
        return states.size() - 1;
    }

    void epsilon(int from, int to) {
        states.get(from).epsilon.add(to);
    }

    void byteRange(int from, int lo, int hi, int to) {
        Edges e = states.get(from);
        e.lo.add(lo);
        e.hi.add(hi);
        e.byteTarget.add(to);
    }

    // ---- fragments ----

    /** @return a fragment that matches the empty text */
    Fragment empty() {
        int s = newState();
        return new Fragment(s, s);
    }

    /** @return one byte in {@code [lo, hi]} */
    Fragment bytes(int lo, int hi) {
        int s = newState();
        int e = newState();
        byteRange(s, lo, hi, e);
        return new Fragment(s, e);
    }

    /** @return these bytes, in order */
    Fragment bytes(byte[] text) {
        int s = newState();
        int at = s;
        for (byte b : text) {
            int next = newState();
            byteRange(at, b & 0xFF, b & 0xFF, next);
            at = next;
        }
        return new Fragment(s, at);
    }

    /** @return the UTF-8 bytes of {@code text}, or one atomic token spelling it */
    Fragment literal(String text) {
        Fragment spelled = bytes(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        if (!text.isEmpty()) {
            Edges e = states.get(spelled.start());
            e.literal.add(text);
            e.literalTarget.add(spelled.end());
        }
        return spelled;
    }

    /** @return the UTF-8 bytes of {@code text} only (no atomic token may spell it) */
    Fragment text(String text) {
        return bytes(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** @return the parts one after another */
    Fragment seq(Fragment... parts) {
        return seq(List.of(parts));
    }

    /** @return the parts one after another */
    Fragment seq(List<Fragment> parts) {
        if (parts.isEmpty()) {
            return empty();
        }
        for (int i = 1; i < parts.size(); i++) {
            epsilon(parts.get(i - 1).end(), parts.get(i).start());
        }
        return new Fragment(parts.get(0).start(), parts.get(parts.size() - 1).end());
    }

    /** @return any one of the choices */
    Fragment alt(List<Fragment> choices) {
        if (choices.size() == 1) {
            return choices.get(0);
        }
        int s = newState();
        int e = newState();
        for (Fragment c : choices) {
            epsilon(s, c.start());
            epsilon(c.end(), e);
        }
        return new Fragment(s, e);
    }

    /** @return any one of the choices */
    Fragment alt(Fragment... choices) {
        return alt(List.of(choices));
    }

    /** @return the fragment or nothing */
    Fragment optional(Fragment f) {
        int s = newState();
        int e = newState();
        epsilon(s, f.start());
        epsilon(f.end(), e);
        epsilon(s, e);
        return new Fragment(s, e);
    }

    /** @return the fragment any number of times, zero included */
    Fragment star(Fragment f) {
        int s = newState();
        int e = newState();
        epsilon(s, f.start());
        epsilon(f.end(), s);
        epsilon(s, e);
        return new Fragment(s, e);
    }

    /**
     * @param make makes a fresh copy of the repeated fragment
     * @param min the fewest copies
     * @param max the most copies, or {@link Integer#MAX_VALUE} for any number
     * @return {@code min} to {@code max} copies in a row
     */
    Fragment repeat(Supplier<Fragment> make, int min, int max) {
        List<Fragment> parts = new ArrayList<>();
        for (int i = 0; i < min; i++) {
            parts.add(make.get());
        }
        if (max == Integer.MAX_VALUE) {
            parts.add(star(make.get()));
        } else {
            // Nested optionals (a(b(c)?)?)? keep the graph linear in max - min.
            Fragment tail = null;
            for (int i = max - min; i > 0; i--) {
                Fragment one = make.get();
                tail = optional(tail == null ? one : seq(one, tail));
            }
            if (tail != null) {
                parts.add(tail);
            }
        }
        return seq(parts);
    }

    /** @return a call of {@code rule}: its whole text, then back here */
    Fragment call(int rule) {
        int s = newState();
        int e = newState();
        Edges edges = states.get(s);
        edges.callRule.add(rule);
        edges.callReturn.add(e);
        return new Fragment(s, e);
    }
}
