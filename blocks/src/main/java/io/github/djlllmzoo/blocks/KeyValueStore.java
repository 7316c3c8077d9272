package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;

/**
 * Where one forward pass stores each layer's new keys and values, and what it returns for the layer
 * to attend over: a {@link KvCache} (every row at the same length) or one pass over a {@link
 * SlotKvCache}'s rows (each row at its own length).
 */
public interface KeyValueStore {

    /**
     * Stores one layer's new keys and values and returns what the layer attends over.
     *
     * @param layer the layer index
     * @param k new keys (B, H_kv, T, D)
     * @param v new values (B, H_kv, T, D)
     * @return keys and values (B, H_kv, S, D), the new positions included
     */
    KeyValues update(int layer, NDArray k, NDArray v);
}
