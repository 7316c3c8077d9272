package io.github.djlllmzoo.constrained;

import java.util.Arrays;
import java.util.BitSet;

/**
 * The tokens one grammar state allows (EOS aside, which depends only on whether the state may end),
 * held as the sorted ids when they are few (most states between JSON tokens allow a handful) and
 * as a bit set when many (inside a string, most of the vocabulary), whichever is smaller; applied to
 * a row of logits by saving the few allowed logits, filling the row with -infinity and putting them
 * back, or by clearing each forbidden one.
 */
final class TokenMask {

    /** The allowed ids in order, or {@code null} when {@link #bits} holds them. */
    private final int[] ids;
    private final BitSet bits;
    private final int count;

    TokenMask(BitSet allowed, int vocabularySize) {
        this.count = allowed.cardinality();
        // An id costs 32 bits, the set one bit per token.
        if ((long) count * Integer.SIZE < vocabularySize) {
            this.ids = allowed.stream().toArray();
            this.bits = null;
        } else {
            this.ids = null;
            this.bits = allowed;
        }
    }

    /** @return roughly how many bytes the mask holds */
    long bytes() {
        return ids != null ? 4L * ids.length : bits.size() / 8;
    }

    int count() {
        return count;
    }

    boolean allows(int id) {
        return ids != null ? Arrays.binarySearch(ids, id) >= 0 : bits.get(id);
    }

    BitSet toBitSet() {
        if (bits != null) {
            return (BitSet) bits.clone();
        }
        BitSet out = new BitSet();
        for (int id : ids) {
            out.set(id);
        }
        return out;
    }

    void apply(float[] logits, int[] eosTokenIds, boolean eosAllowed) {
        float[] eos = new float[eosTokenIds.length];
        for (int i = 0; i < eosTokenIds.length; i++) {
            eos[i] = eosTokenIds[i] < logits.length ? logits[eosTokenIds[i]] : 0f;
        }
        if (ids != null) {
            float[] kept = new float[ids.length];
            for (int k = 0; k < ids.length; k++) {
                kept[k] = ids[k] < logits.length ? logits[ids[k]] : 0f;
            }
            Arrays.fill(logits, Float.NEGATIVE_INFINITY);
            for (int k = 0; k < ids.length && ids[k] < logits.length; k++) {
                logits[ids[k]] = kept[k];
            }
        } else {
            for (int i = bits.nextClearBit(0); i < logits.length; i = bits.nextClearBit(i + 1)) {
                logits[i] = Float.NEGATIVE_INFINITY;
            }
        }
        for (int i = 0; i < eosTokenIds.length; i++) {
            if (eosTokenIds[i] < logits.length) {
                logits[eosTokenIds[i]] = eosAllowed ? eos[i] : Float.NEGATIVE_INFINITY;
            }
        }
    }
}
