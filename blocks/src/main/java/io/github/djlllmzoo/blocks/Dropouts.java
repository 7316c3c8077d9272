package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;

/**
 * Dropout that is the identity outside training, and in training keeps a one-byte mask for its
 * backward pass where the engine's own CPU dropout keeps its noise in the input's type.
 */
final class Dropouts {

    private Dropouts() {}

    /**
     * {@code x} with each element zeroed with probability {@code rate} and the rest scaled by
     * {@code 1 / (1 - rate)}: the engine's dropout, value for value and gradient for gradient.
     *
     * <p>PyTorch's CPU dropout multiplies {@code x} by a float noise array ({@code bernoulli(1 -
     * rate) / (1 - rate)}) that autograd keeps until the backward pass, as large as {@code x}: in a
     * LoRA step it is one such array per adapted projection and layer. The same noise is drawn
     * here, from the same generator in the same order, by dropping out an array of ones; only
     * where it is non-zero is kept (a boolean array, a quarter of float32's size), and {@code x}
     * times that mask times the engine's scale is the engine's result to the bit.
     *
     * @param x the input; the result is attached to its manager
     * @param rate the probability of zeroing an element
     * @param training whether this is a training pass
     * @return the dropped-out input, or {@code x} itself outside training or at rate 0
     */
    static NDArray apply(NDArray x, float rate, boolean training) {
        if (!training || rate <= 0) {
            return x;
        }
        if (rate >= 1) {
            return x.getNDArrayInternal().dropout(x, rate, true).singletonOrThrow();
        }
        NDArray kept; // x's shape, boolean
        try (NDArray ones = x.onesLike();
                NDArray noise = ones.getNDArrayInternal().dropout(ones, rate, true).singletonOrThrow()) {
            kept = noise.toType(DataType.BOOLEAN, false);
        }
        // ATen divides the noise by 1 - rate as a float: this is each kept element's factor. Autograd
        // keeps the operand for the backward pass, so it must not be a Java number (see Scalars).
        float scale = 1f / (float) (1 - (double) rate);
        try (NDArray masked = x.mul(kept)) {
            NDArray dropped = masked.mul(Scalars.of(scale, masked));
            kept.close(); // autograd holds its own reference for the backward pass
            return dropped;
        }
    }
}
