package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;

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
