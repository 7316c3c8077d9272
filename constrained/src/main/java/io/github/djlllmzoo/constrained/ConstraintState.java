package io.github.djlllmzoo.constrained;

import java.nio.charset.StandardCharsets;
import java.util.BitSet;

/**
 * Where one generated sequence stands in its constraint: masks the next-token logits so only a
 * token that keeps the output valid can be picked, and advances on the token picked (llama.cpp's
 * {@code common_sampler_accept}). EOS is allowed exactly when the output so far is complete. Not
 * thread-safe: one state per sequence.
 */
public final class ConstraintState {

    private final CompiledConstraint constraint;
    private final int[] eosTokenIds;
    private MatcherState state;
    private boolean ended;

    ConstraintState(CompiledConstraint constraint, int[] eosTokenIds) {
        this.constraint = constraint;
        this.eosTokenIds = eosTokenIds;
        this.state = constraint.matcher().start();
    }

    /**
     * Sets every logit of a token that cannot continue the output to -infinity. Ids past the
     * vocabulary (a model's padded output rows) are never allowed.
     *
     * @param logits one row of next-token logits, modified in place
     */
    public void mask(float[] logits) {
        if (ended) {
            java.util.Arrays.fill(logits, Float.NEGATIVE_INFINITY);
            return;
        }
        constraint.matcher().mask(state, constraint.vocabulary()).apply(logits, eosTokenIds, state.accepting);
    }

    /** @return the token ids allowed next, EOS included when the output is complete */
    public BitSet allowedTokens() {
        if (ended) {
            return new BitSet();
        }
        BitSet out = constraint.matcher().mask(state, constraint.vocabulary()).toBitSet();
        for (int eos : eosTokenIds) {
            out.set(eos, state.accepting);
        }
        return out;
    }

    /**
     * @param tokenId a token id
     * @return whether it may come next
     */
    public boolean isAllowed(int tokenId) {
        if (ended) {
            return false;
        }
        for (int eos : eosTokenIds) {
            if (eos == tokenId) {
                return state.accepting;
            }
        }
        return constraint.matcher().mask(state, constraint.vocabulary()).allows(tokenId);
    }

    /**
     * Advances past a token picked from masked logits.
     *
     * @param tokenId the token
     * @throws IllegalArgumentException if the token cannot continue the output
     */
    public void accept(int tokenId) {
        if (!isAllowed(tokenId)) {
            throw new IllegalArgumentException(
                    "token " + tokenId + " cannot continue the constrained output here");
        }
        for (int eos : eosTokenIds) {
            if (eos == tokenId) {
                ended = true;
                return;
            }
        }
        TokenVocabulary vocabulary = constraint.vocabulary();
        Matcher matcher = constraint.matcher();
        byte[] bytes = vocabulary.bytesOf(tokenId);
        state =
                vocabulary.isAtomic(tokenId)
                        ? matcher.advanceLiteral(state, new String(bytes, StandardCharsets.UTF_8))
                        : matcher.advance(state, bytes);
    }

    /** @return whether the output so far is complete (EOS may come now) */
    public boolean isComplete() {
        return !ended && state.accepting;
    }

    /** @return whether nothing but the end can follow: the output is complete and cannot grow */
    public boolean isFinished() {
        return ended || (state.accepting && state.isFinal());
    }
}
