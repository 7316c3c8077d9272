package io.github.djlllmzoo.constrained;

import java.util.BitSet;

/**
 * The tokens one grammar state allows (EOS aside, which depends only on whether the state may end),
 * and how to apply them to a row of logits quickly: when few tokens are allowed their logits are
 * saved, the row filled with -infinity and the few put back; else each forbidden one is cleared.
 *
 * @param allowed the allowed token ids
 * @param count how many there are
 */
record TokenMask(BitSet allowed, int count) {

    void apply(float[] logits, int[] eosTokenIds, boolean eosAllowed) {
        float[] eos = new float[eosTokenIds.length];
        for (int i = 0; i < eosTokenIds.length; i++) {
            eos[i] = eosTokenIds[i] < logits.length ? logits[eosTokenIds[i]] : 0f;
        }
        if (count < logits.length / 16) {
            int[] ids = new int[count];
            float[] kept = new float[count];
            int n = 0;
            for (int i = allowed.nextSetBit(0); i >= 0 && i < logits.length; i = allowed.nextSetBit(i + 1)) {
                ids[n] = i;
                kept[n++] = logits[i];
            }
            java.util.Arrays.fill(logits, Float.NEGATIVE_INFINITY);
            for (int k = 0; k < n; k++) {
                logits[ids[k]] = kept[k];
            }
        } else {
            for (int i = allowed.nextClearBit(0); i < logits.length; i = allowed.nextClearBit(i + 1)) {
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
