package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import java.util.Map;

/**
 * What every attention layer needs for one forward pass besides its input: the absolute position
 * of each new token, the additive attention mask, the KV cache, and where the model's arrays live.
 *
 * @param positionIds (B or 1, T) int64 absolute positions of the new tokens
 * @param mask additive mask (B, 1, T, S) with 0 where a query may attend and a large negative
 *     value where it may not; {@code null} when every query may see every key (a single decode step
 *     without padding)
 * @param windowMasks by window size, the additive mask of the layers that attend over that sliding
 *     window (over the keys their cache returns; a {@code null} value when nothing is masked); empty
 *     when no layer has a window
 * @param cache the KV cache (or one pass over a slot cache's rows) to update, or {@code null} for a
 *     cache-free pass
 * @param modelManager the manager that holds the model's parameters on the pass's device: what
 *     layers derive once from the config and keep (RoPE tables) lives there, as long as the weights
 */
public record AttentionContext(
        NDArray positionIds, NDArray mask, Map<Integer, NDArray> windowMasks, KeyValueStore cache, NDManager modelManager) {

    /**
     * Copies the masks.
     *
     * @param positionIds (B or 1, T) int64 absolute positions of the new tokens
     * @param mask additive mask (B, 1, T, S) with 0 where a query may attend and a large negative value where it may not; {@code null} when every query may see every key (a single decode step without padding)
     * @param windowMasks by window size, the additive mask of the layers that attend over that sliding window (over the keys their cache returns; a {@code null} value when nothing is masked); empty when no layer has a window
     * @param cache the KV cache to update, or {@code null} for a cache-free pass
     * @param modelManager the manager that holds the model's parameters on the pass's device: what layers derive once from the config and keep (RoPE tables) lives there, as long as the weights
     */
    public AttentionContext {
        windowMasks = windowMasks.isEmpty() ? Map.of() : java.util.Collections.unmodifiableMap(new java.util.HashMap<>(windowMasks));
    }

    /**
     * A context for layers without a sliding window.
     *
     * @param positionIds (B or 1, T) int64 absolute positions of the new tokens
     * @param mask additive mask (B, 1, T, S), or {@code null}
     * @param cache the KV cache to update, or {@code null}
     * @param modelManager the manager that holds the model's parameters
     */
    public AttentionContext(NDArray positionIds, NDArray mask, KeyValueStore cache, NDManager modelManager) {
        this(positionIds, mask, Map.of(), cache, modelManager);
    }

    /**
     * The mask of a layer.
     *
     * @param window the layer's sliding window, or 0 for a layer that sees the whole sequence
     * @return its additive mask, or {@code null} when nothing is masked
     * @throws IllegalStateException if the pass masks something but made no mask for this window
     */
    public NDArray mask(int window) {
        if (window == 0) {
            return mask;
        }
        if (!windowMasks.containsKey(window)) {
            if (mask == null) {
                return null; // nothing is masked: a window mask is causal too, so it exists wherever mask does
            }
            throw new IllegalStateException("this pass has no mask for a sliding window of " + window);
        }
        return windowMasks.get(window);
    }

    /**
     * What a layer attends over: its new keys and values stored in the cache, with everything the
     * cache held before ({@link KvCache#update}), or just the new ones in a cache-free pass.
     *
     * @param layer the layer's index in the cache
     * @param k new keys (B, H_kv, T, D)
     * @param v new values (B, H_kv, T, D)
     * @return keys and values (B, H_kv, S, D)
     */
    public KeyValues update(int layer, NDArray k, NDArray v) {
        return cache == null ? KeyValues.of(k, v) : cache.update(layer, k, v);
    }

    /**
     * The context of a plain causal pass over a whole sequence without cache or padding, for a
     * layer run on its own.
     *
     * @param x the input (B, T, ...); the context's arrays, and what layers derive and keep, are
     *     attached to its manager
     * @return positions 0..T-1 and the causal mask
     */
    public static AttentionContext causal(NDArray x) {
        int t = Math.toIntExact(x.getShape().get(1));
        NDArray positions = x.getManager().arange(0, t, 1, DataType.INT64).expandDims(0); // (1, T)
        NDArray mask = AttentionMask.build(x.getManager(), t, 0, null, x.getDataType());
        return new AttentionContext(positions, mask, null, x.getManager());
    }
}
