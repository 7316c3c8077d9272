package io.github.djlllmzoo.translators;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;

/**
 * Next-token logits recomputed independently of generation: one full forward pass over the whole
 * sequence, without a KV cache, padding or batching.
 */
final class ModelLogits {

    private ModelLogits() {}

    /**
     * @param block the model
     * @param manager a manager on its device
     * @param ids the sequence
     * @return the logits for the token after {@code ids}
     */
    static float[] next(CausalLmBlock block, NDManager manager, long[] ids) {
        try (NDManager scope = manager.newSubManager()) {
            NDArray input = scope.create(ids, new Shape(1, ids.length));
            NDArray logits = block.forward(null, input, null, null, null, false, false); // (1, T, V)
            return logits.get(0).get(ids.length - 1).toType(DataType.FLOAT32, false).toFloatArray();
        }
    }

    /** @return {@code prefix} followed by {@code suffix} */
    static long[] concat(long[] prefix, long[] suffix) {
        long[] out = java.util.Arrays.copyOf(prefix, prefix.length + suffix.length);
        System.arraycopy(suffix, 0, out, prefix.length, suffix.length);
        return out;
    }

    /** @return {@code ids[0 .. n)} */
    static long[] head(long[] ids, int n) {
        return java.util.Arrays.copyOf(ids, n);
    }

    /** @return softmax of {@code logits / temperature} in double precision */
    static double[] probabilities(float[] logits, double temperature) {
        double max = Double.NEGATIVE_INFINITY;
        for (float x : logits) {
            max = Math.max(max, x / temperature);
        }
        double[] p = new double[logits.length];
        double total = 0;
        for (int i = 0; i < logits.length; i++) {
            p[i] = Math.exp(logits[i] / temperature - max);
            total += p[i];
        }
        for (int i = 0; i < p.length; i++) {
            p[i] /= total;
        }
        return p;
    }
}
