package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/** Builds the additive causal (and padding) mask once per forward pass, shared by all layers. */
public final class AttentionMask {

    private AttentionMask() {}

    /**
     * The mask for {@code t} new queries after {@code past} cached positions: query {@code i} may
     * attend key {@code j} iff {@code j <= past + i} and key {@code j} is not padding.
     *
     * @param manager where to create it (the forward pass's manager)
     * @param t new positions
     * @param past cached positions
     * @param paddingMask (B, past + t) with 1 for real tokens and 0 for padding, or {@code null}
     * @param dataType the compute type
     * @return the additive mask (B or 1, 1, t, past + t), or {@code null} when nothing is masked
     */
    public static NDArray build(
            NDManager manager, int t, int past, NDArray paddingMask, DataType dataType) {
        if (paddingMask == null && t == 1) {
            return null;
        }
        int s = past + t;
        NDArray keys = manager.arange(0, s).reshape(1, s); // (1, S)
        NDArray queries = manager.arange(past, s).reshape(t, 1); // (T, 1)
        NDArray allowed = keys.lte(queries).reshape(1, 1, t, s); // (1, 1, T, S)
        if (paddingMask != null) {
            long b = paddingMask.getShape().get(0);
            NDArray real = paddingMask.neq(0).reshape(b, 1, 1, s); // (B, 1, 1, S)
            allowed = allowed.logicalAnd(real); // (B, 1, T, S)
        }
        return allowed.toType(dataType, false).subi(1).muli(maskValue(dataType));
    }

    /**
     * The mask of a layer with a sliding window of {@code window} positions, for {@code t} new
     * queries at {@code past .. past+t-1} over keys at the given absolute positions (as Hugging
     * Face's sliding-window mask, which drops key {@code j} from query {@code i} when {@code i - j
     * >= window}): query {@code i} may attend key {@code j} iff {@code i - window < j <= i} and key
     * {@code j} is not padding.
     *
     * @param manager where to create it (the forward pass's manager)
     * @param t new positions
     * @param past cached positions
     * @param keyPositions the absolute position of each key, in the order the layer attends them
     * @param window the positions a query sees, itself included
     * @param paddingMask (B, past + t) with 1 for real tokens and 0 for padding, or {@code null}
     * @param dataType the compute type
     * @return the additive mask (B or 1, 1, t, keys), or {@code null} when nothing is masked
     */
    public static NDArray window(
            NDManager manager,
            int t,
            int past,
            long[] keyPositions,
            int window,
            NDArray paddingMask,
            DataType dataType) {
        int s = keyPositions.length;
        boolean[] allowed = new boolean[t * s];
        boolean all = true;
        for (int i = 0; i < t; i++) {
            long query = past + i;
            for (int j = 0; j < s; j++) {
                long distance = query - keyPositions[j];
                allowed[i * s + j] = distance >= 0 && distance < window;
                all &= allowed[i * s + j];
            }
        }
        if (all && paddingMask == null) {
            return null;
        }
        NDArray mask = manager.create(allowed, new Shape(1, 1, t, s)); // (1, 1, T, S)
        if (paddingMask != null) {
            long b = paddingMask.getShape().get(0);
            NDArray keys = manager.create(keyPositions); // (S)
            NDArray real = paddingMask.get(new NDIndex(":, {}", keys)).neq(0).reshape(b, 1, 1, s); // (B, 1, 1, S)
            mask = mask.logicalAnd(real); // (B, 1, T, S)
        }
        return mask.toType(dataType, false).subi(1).muli(maskValue(dataType));
    }

    /**
     * The mask of a decode step whose rows are each at a length of their own ({@link SlotKvCache}):
     * row {@code r}'s query, at position {@code past[r]}, may attend key {@code j} iff {@code j <=
     * past[r]} and, with a sliding window, {@code past[r] - j < window}.
     *
     * @param manager where to create it (the step's manager)
     * @param past each row's positions before the step
     * @param window the positions a query sees, itself included, or 0 for all
     * @param dataType the compute type
     * @return the additive mask (B, 1, 1, max(past) + 1), or {@code null} when nothing is masked
     */
    public static NDArray rows(NDManager manager, int[] past, int window, DataType dataType) {
        int s = 0;
        for (int p : past) {
            s = Math.max(s, p + 1);
        }
        boolean[] allowed = new boolean[past.length * s];
        boolean all = true;
        for (int r = 0; r < past.length; r++) {
            for (int j = 0; j < s; j++) {
                int distance = past[r] - j;
                allowed[r * s + j] = distance >= 0 && (window <= 0 || distance < window);
                all &= allowed[r * s + j];
            }
        }
        if (all) {
            return null;
        }
        NDArray mask = manager.create(allowed, new Shape(past.length, 1, 1, s)); // (B, 1, 1, S)
        return mask.toType(dataType, false).subi(1).muli(maskValue(dataType));
    }

    /**
     * The magnitude used for masked positions: the largest finite value of the type, as Hugging
     * Face uses {@code torch.finfo(dtype).min}, so fully masked rows stay finite.
     *
     * @param dataType the compute type
     * @return the magnitude
     */
    public static float maskValue(DataType dataType) {
        switch (dataType) {
            case FLOAT16:
                return 65504f;
            case BFLOAT16:
                return 3.38e38f;
            default:
                return Float.MAX_VALUE;
        }
    }
}
