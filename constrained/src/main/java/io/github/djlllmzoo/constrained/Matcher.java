package io.github.djlllmzoo.constrained;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs a {@link Grammar} over bytes: its states are sets of (grammar state, call stack) positions,
 * closed over empty edges, calls and returns, and interned, so each byte transition and each
 * state's token mask is computed once and then read from memory. Thread-safe: rows of a batch and
 * requests on other threads share one matcher (two threads may compute the same transition at once;
 * interning makes them agree).
 */
final class Matcher {

    /** The state after a byte nothing accepts. */
    static final MatcherState DEAD = new MatcherState(new int[0], new MatcherState.Frame[0], false);

    /** Calls nested deeper than this are cut (a recursive schema's output is at most this deep). */
    static final int MAX_CALL_DEPTH = 96;

    /** Memory the kept masks of one matcher may take; past it masks are computed on each visit. */
    private static final long MAX_MASK_BYTES = 32L << 20;

    private final int[][] lo;
    private final int[][] hi;
    private final int[][] byteTarget;
    private final int[][] epsilon;
    private final int[][] callRule;
    private final int[][] callReturn;
    private final String[][] literal;
    private final int[][] literalTarget;
    private final int[] endOfRule;
    private final int[] ruleStart;
    private final boolean[] consumes;
    private final Set<String> literals = new HashSet<>();

    private final ConcurrentHashMap<MatcherState, MatcherState> states = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<FrameKey, MatcherState.Frame> frames = new ConcurrentHashMap<>();
    private final AtomicInteger frameIds = new AtomicInteger();
    private final AtomicLong maskBytes = new AtomicLong();
    private final MatcherState start;

    private record FrameKey(int returnState, MatcherState.Frame parent) {}

    private record Position(int state, MatcherState.Frame stack) {}

    Matcher(Grammar g) {
        int n = g.stateCount();
        lo = new int[n][];
        hi = new int[n][];
        byteTarget = new int[n][];
        epsilon = new int[n][];
        callRule = new int[n][];
        callReturn = new int[n][];
        literal = new String[n][];
        literalTarget = new int[n][];
        endOfRule = new int[n];
        consumes = new boolean[n];
        for (int s = 0; s < n; s++) {
            Grammar.Edges e = g.edges(s);
            lo[s] = toArray(e.lo);
            hi[s] = toArray(e.hi);
            byteTarget[s] = toArray(e.byteTarget);
            epsilon[s] = toArray(e.epsilon);
            callRule[s] = toArray(e.callRule);
            callReturn[s] = toArray(e.callReturn);
            literal[s] = e.literal.toArray(new String[0]);
            literalTarget[s] = toArray(e.literalTarget);
            literals.addAll(e.literal);
            endOfRule[s] = e.endOfRule;
            consumes[s] = e.consumes();
        }
        ruleStart = new int[g.ruleCount()];
        for (int r = 0; r < ruleStart.length; r++) {
            ruleStart[r] = g.ruleStart(r);
        }
        start = closure(List.of(new Position(ruleStart[0], null)));
    }

    private static int[] toArray(Grammar.IntList list) {
        int[] out = new int[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = list.get(i);
        }
        return out;
    }

    MatcherState start() {
        return start;
    }

    /** @return whether some literal of the grammar is spelled {@code text} */
    boolean hasLiteral(String text) {
        return literals.contains(text);
    }

    /** @return the state after byte {@code b}, or {@link #DEAD} */
    MatcherState advance(MatcherState from, int b) {
        MatcherState known = from.next[b];
        if (known != null) {
            return known;
        }
        List<Position> seeds = new ArrayList<>();
        for (int i = 0; i < from.states.length; i++) {
            int s = from.states[i];
            for (int k = 0; k < lo[s].length; k++) {
                if (b >= lo[s][k] && b <= hi[s][k]) {
                    seeds.add(new Position(byteTarget[s][k], from.stacks[i]));
                }
            }
        }
        MatcherState to = seeds.isEmpty() ? DEAD : closure(seeds);
        from.next[b] = to;
        return to;
    }

    /** @return the state after the bytes, or {@link #DEAD} */
    MatcherState advance(MatcherState from, byte[] bytes) {
        MatcherState s = from;
        for (int i = 0; i < bytes.length && s != DEAD; i++) {
            s = advance(s, bytes[i] & 0xFF);
        }
        return s;
    }

    /** @return the state after an atomic token spelling a literal {@code text}, or {@link #DEAD} */
    MatcherState advanceLiteral(MatcherState from, String text) {
        return from.literalNext.computeIfAbsent(
                text,
                t -> {
                    List<Position> seeds = new ArrayList<>();
                    for (int i = 0; i < from.states.length; i++) {
                        int s = from.states[i];
                        for (int k = 0; k < literal[s].length; k++) {
                            if (literal[s][k].equals(t)) {
                                seeds.add(new Position(literalTarget[s][k], from.stacks[i]));
                            }
                        }
                    }
                    return seeds.isEmpty() ? DEAD : closure(seeds);
                });
    }

    /** The positions reachable from the seeds without reading a byte, as an interned state. */
    private MatcherState closure(List<Position> seeds) {
        Set<Position> seen = new HashSet<>(seeds);
        ArrayDeque<Position> work = new ArrayDeque<>(seeds);
        List<Position> kept = new ArrayList<>();
        boolean accepting = false;
        while (!work.isEmpty()) {
            Position p = work.pop();
            int s = p.state();
            if (consumes[s]) {
                kept.add(p);
            }
            if (endOfRule[s] >= 0) {
                if (p.stack() == null) {
                    accepting |= endOfRule[s] == 0;
                } else {
                    push(new Position(p.stack().returnState, p.stack().parent), seen, work);
                }
            }
            for (int t : epsilon[s]) {
                push(new Position(t, p.stack()), seen, work);
            }
            for (int k = 0; k < callRule[s].length; k++) {
                if (p.stack() == null || p.stack().depth < MAX_CALL_DEPTH) {
                    MatcherState.Frame f = frame(callReturn[s][k], p.stack());
                    push(new Position(ruleStart[callRule[s][k]], f), seen, work);
                }
            }
        }
        kept.sort(
                (a, b) ->
                        a.state() != b.state()
                                ? Integer.compare(a.state(), b.state())
                                : Integer.compare(id(a.stack()), id(b.stack())));
        int[] st = new int[kept.size()];
        MatcherState.Frame[] stacks = new MatcherState.Frame[kept.size()];
        for (int i = 0; i < st.length; i++) {
            st[i] = kept.get(i).state();
            stacks[i] = kept.get(i).stack();
        }
        if (st.length == 0 && !accepting) {
            return DEAD;
        }
        MatcherState made = new MatcherState(st, stacks, accepting);
        MatcherState prior = states.putIfAbsent(made, made);
        return prior != null ? prior : made;
    }

    private static int id(MatcherState.Frame f) {
        return f == null ? -1 : f.id;
    }

    private static void push(Position p, Set<Position> seen, ArrayDeque<Position> work) {
        if (seen.add(p)) {
            work.push(p);
        }
    }

    private MatcherState.Frame frame(int returnState, MatcherState.Frame parent) {
        return frames.computeIfAbsent(
                new FrameKey(returnState, parent),
                k -> new MatcherState.Frame(returnState, parent, frameIds.getAndIncrement()));
    }

    /** @return the number of states made so far (for tests and benchmarks) */
    int stateCount() {
        return states.size();
    }

    /**
     * The tokens allowed in a state, EOS aside: every non-atomic token whose bytes the state can
     * read in full (one walk of the vocabulary trie), and every atomic token that spells a literal
     * the state is at the start of.
     */
    TokenMask mask(MatcherState state, TokenVocabulary vocabulary) {
        TokenMask known = state.mask;
        if (known != null) {
            return known;
        }
        BitSet allowed = new BitSet(vocabulary.size());
        if (!state.isFinal()) {
            walk(vocabulary.trie(), 0, state, allowed);
            BitSet atomic = vocabulary.atomicTokens();
            for (int id = atomic.nextSetBit(0); id >= 0; id = atomic.nextSetBit(id + 1)) {
                String text = new String(vocabulary.bytesOf(id), java.nio.charset.StandardCharsets.UTF_8);
                if (hasLiteral(text) && advanceLiteral(state, text) != DEAD) {
                    allowed.set(id);
                }
            }
        }
        TokenMask mask = new TokenMask(allowed, vocabulary.size());
        if (maskBytes.addAndGet(mask.bytes()) <= MAX_MASK_BYTES) {
            state.mask = mask;
        }
        return mask;
    }

    private void walk(VocabularyTrie trie, int node, MatcherState state, BitSet allowed) {
        for (int c = trie.childStart[node]; c < trie.childStart[node + 1]; c++) {
            MatcherState to = advance(state, trie.childByte[c] & 0xFF);
            if (to == DEAD) {
                continue;
            }
            int child = trie.childNode[c];
            for (int t = trie.tokenStart[child]; t < trie.tokenStart[child + 1]; t++) {
                allowed.set(trie.tokenIds[t]);
            }
            if (!to.isFinal()) {
                walk(trie, child, to, allowed);
            }
        }
    }
}
