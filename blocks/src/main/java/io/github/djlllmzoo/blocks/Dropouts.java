package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;

/** Dropout that is the identity outside training. */
final class Dropouts {

    private Dropouts() {}

    static NDArray apply(NDArray x, float rate, boolean training) {
        if (!training || rate <= 0) {
            return x;
        }
        return x.getNDArrayInternal().dropout(x, rate, true).singletonOrThrow();
    }
}
