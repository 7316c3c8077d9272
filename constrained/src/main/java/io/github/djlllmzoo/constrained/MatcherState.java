package io.github.djlllmzoo.constrained;

import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where a {@link Matcher} stands after some bytes: the set of network positions still alive, each
 * a grammar state and the stack of rule calls that led there, and whether the output may end here.
 * Interned by its matcher (equal states are the same object), so the bytes and tokens it allows
 * are worked out once and kept: its transitions form a deterministic automaton built as decoding
 * reaches it.
 */
final class MatcherState {

    /** One rule call on a stack: the state to return to, under the calls before it. Interned. */
    static final class Frame {
        final int returnState;
        final Frame parent;
        final int depth;
        final int id;

        Frame(int returnState, Frame parent, int id) {
            this.returnState = returnState;
            this.parent = parent;
            this.depth = parent == null ? 1 : parent.depth + 1;
            this.id = id;
        }
    }

    final int[] states;
    final Frame[] stacks;
    final boolean accepting;
    private final int hash;

    /** Transitions by byte, filled as they are asked for; {@link Matcher#DEAD} where none. */
    final MatcherState[] next = new MatcherState[256];
    /** Transitions by atomic token text. */
    final ConcurrentHashMap<String, MatcherState> literalNext = new ConcurrentHashMap<>();
    /** The tokens allowed here, once worked out. */
    volatile TokenMask mask;

    MatcherState(int[] states, Frame[] stacks, boolean accepting) {
        this.states = states;
        this.stacks = stacks;
        this.accepting = accepting;
        int h = Boolean.hashCode(accepting);
        for (int i = 0; i < states.length; i++) {
            h = 31 * (31 * h + states[i]) + (stacks[i] == null ? 0 : stacks[i].id + 1);
        }
        this.hash = h;
    }

    /** @return whether no byte or token can follow (only the end, if accepting) */
    boolean isFinal() {
        return states.length == 0;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof MatcherState other)) {
            return false;
        }
        if (hash != other.hash || accepting != other.accepting || !Arrays.equals(states, other.states)) {
            return false;
        }
        for (int i = 0; i < stacks.length; i++) {
            if (stacks[i] != other.stacks[i]) {
                return false;
            }
        }
        return true;
    }

    @Override
    public int hashCode() {
        return hash;
    }
}
