package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;

/**
 * The keys and values one attention layer attends over, (B, H_kv, S, D) each: what {@link
 * KvCache#update} returns (Hugging Face's {@code past_key_value.update(k, v, layer)}), or the
 * layer's own keys and values where there is no cache ({@link #of}).
 *
 * <p>From a cache they are the first {@link #length()} positions of the layer's buffers, (B, H_kv,
 * capacity, D), which {@link #keyBuffer()} and {@link #valueBuffer()} give: a decode step's kernel
 * reads those in place, without a view or a copy. {@link #keys()} and {@link #values()} are views of them, made on
 * first use (a step whose attention reads the buffers makes none) and attached to the manager of
 * the new keys.
 */
public final class KeyValues {

    private final NDArray keyBuffer;
    private final NDArray valueBuffer;
    private final int length;
    private final NDManager viewManager;
    private NDArray keys;
    private NDArray values;

    private KeyValues(
            NDArray keyBuffer, NDArray valueBuffer, int length, NDManager viewManager, NDArray keys, NDArray values) {
        this.keyBuffer = keyBuffer;
        this.valueBuffer = valueBuffer;
        this.length = length;
        this.viewManager = viewManager;
        this.keys = keys;
        this.values = values;
    }

    /**
     * Keys and values that are all there is (a pass without a cache).
     *
     * @param keys (B, H_kv, S, D)
     * @param values (B, H_kv, S, D)
     * @return them, without buffers
     */
    public static KeyValues of(NDArray keys, NDArray values) {
        int length = Math.toIntExact(keys.getShape().get(2));
        return new KeyValues(null, null, length, keys.getManager(), keys, values);
    }

    /**
     * The first {@code length} positions of a cache layer's buffers.
     *
     * @param keyBuffer (B, H_kv, capacity, D), owned by the cache
     * @param valueBuffer (B, H_kv, capacity, D), owned by the cache
     * @param length the positions filled
     * @param viewManager the manager that gets the views of {@link #keys()} and {@link #values()}
     * @return the filled part
     */
    static KeyValues inBuffers(NDArray keyBuffer, NDArray valueBuffer, int length, NDManager viewManager) {
        return new KeyValues(keyBuffer, valueBuffer, length, viewManager, null, null);
    }

    /** @return the keys (B, H_kv, S, D); from a cache, a view of its buffer */
    public NDArray keys() {
        if (keys == null) {
            keys = filled(keyBuffer);
        }
        return keys;
    }

    /** @return the values (B, H_kv, S, D); from a cache, a view of its buffer */
    public NDArray values() {
        if (values == null) {
            values = filled(valueBuffer);
        }
        return values;
    }

    /** @return the positions S to attend over */
    public int length() {
        return length;
    }

    /**
     * @return the cache's (B, H_kv, capacity, D) buffer whose first {@link #length()} positions
     *     are the keys, or {@code null} where the keys are not in a cache
     */
    public NDArray keyBuffer() {
        return keyBuffer;
    }

    /** @return the cache's buffer of the values, as {@link #keyBuffer()} is of the keys */
    public NDArray valueBuffer() {
        return valueBuffer;
    }

    /** A view of the first {@code length} positions; a split makes it in one engine call where an index takes several. */
    private NDArray filled(NDArray buffer) {
        NDList parts = buffer.split(new long[] {length}, 2); // [:, :, :length], [:, :, length:]
        parts.get(1).close();
        NDArray view = parts.get(0);
        view.attach(viewManager);
        return view;
    }
}
