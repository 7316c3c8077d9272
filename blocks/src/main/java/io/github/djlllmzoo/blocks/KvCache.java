package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * The keys and values of every layer for the tokens seen so far (Hugging Face's {@code Cache}).
 * Each attention layer hands its new keys and values to {@link #update} and attends over what it
 * returns; the cache counts the positions itself, so after a forward pass every layer holds the
 * same {@link #length()}.
 *
 * <p>Each layer's part ({@code LayerCache}) is preallocated as (B, H_kv, capacity, D) and written
 * in place: a decode step writes one position and attention reads the filled part where it lies,
 * never copying the cache. Only key/value heads are stored, so grouped-query models keep a cache
 * {@code H / H_kv} times smaller. A layer given a sliding window keeps only the window ({@code
 * WindowLayerCache}), so its memory stays bounded however long the sequence grows. The cache owns
 * its arrays through its own manager; {@link #close()} frees them.
 */
public final class KvCache implements KeyValueStore, AutoCloseable {

    private final NDManager manager;
    private final int batchSize;
    private final int maxCapacity;
    private final LayerCache[] layers;

    /**
     * Allocates an empty cache whose layers may keep only a sliding window.
     *
     * @param parent the manager whose device holds the cache; the cache makes a sub-manager
     * @param windows per layer, the positions its queries see (itself included), or 0 to keep all
     * @param batchSize sequences in the batch
     * @param numKvHeads key/value heads per layer
     * @param headDim width of one head
     * @param capacity positions to allocate up front
     * @param maxCapacity the most positions it may ever hold (the context window)
     * @param dataType the element type (the model's compute type)
     */
    public KvCache(
            NDManager parent,
            int[] windows,
            int batchSize,
            int numKvHeads,
            int headDim,
            int capacity,
            int maxCapacity,
            DataType dataType) {
        this(parent, windows, batchSize, numKvHeads, headDim, capacity, maxCapacity, dataType, dataType);
    }

    /**
     * Allocates an empty cache that stores keys and values in a type of its own ({@link
     * KvCacheDtype}): they are rounded to it as they are stored, and read back as {@code
     * dataType}.
     *
     * @param parent the manager whose device holds the cache; the cache makes a sub-manager
     * @param windows per layer, the positions its queries see (itself included), or 0 to keep all
     * @param batchSize sequences in the batch
     * @param numKvHeads key/value heads per layer
     * @param headDim width of one head
     * @param capacity positions to allocate up front
     * @param maxCapacity the most positions it may ever hold (the context window)
     * @param dataType the model's compute type, which {@link #update} and {@link #read} return
     * @param storedType the element type of the buffers
     */
    public KvCache(
            NDManager parent,
            int[] windows,
            int batchSize,
            int numKvHeads,
            int headDim,
            int capacity,
            int maxCapacity,
            DataType dataType,
            DataType storedType) {
        int numLayers = windows.length;
        if (numLayers < 1) {
            throw new IllegalArgumentException("a KV cache needs at least one layer, got " + numLayers);
        }
        if (capacity <= 0 || capacity > maxCapacity) {
            throw new IllegalArgumentException(
                    "KV cache capacity " + capacity + " must be in [1, " + maxCapacity + "]");
        }
        this.manager = parent.newSubManager();
        this.batchSize = batchSize;
        this.maxCapacity = maxCapacity;
        this.layers = new LayerCache[numLayers];
        Shape shape = new Shape(batchSize, numKvHeads, capacity, headDim);
        LayerCache.Types types = new LayerCache.Types(dataType, storedType);
        for (int i = 0; i < numLayers; i++) {
            layers[i] =
                    windows[i] > 0
                            ? new WindowLayerCache(manager, shape, windows[i], maxCapacity, types)
                            : new LayerCache(manager, shape, maxCapacity, types);
        }
    }

    /**
     * Stores one layer's keys and values for its next positions and returns what the layer attends
     * over: everything it has stored, the new positions included.
     *
     * @param layer the layer index
     * @param k new keys (B, H_kv, T, D)
     * @param v new values (B, H_kv, T, D)
     * @return keys and values (B, H_kv, past + T, D); their views are attached to {@code k}'s manager
     * @throws IllegalStateException if the layer would exceed the context window
     */
    @Override
    public KeyValues update(int layer, NDArray k, NDArray v) {
        return layers[layer].update(k, v);
    }

    /**
     * Everything one layer has stored, e.g. to hand the cache to code that takes past keys and
     * values as arrays.
     *
     * @param layer the layer index
     * @param manager the manager that gets the views
     * @return keys and values (B, H_kv, length, D)
     */
    public KeyValues read(int layer, NDManager manager) {
        return layers[layer].read(manager);
    }

    /** @return positions stored by every layer (all of them between forward passes) */
    public int length() {
        int length = Integer.MAX_VALUE;
        for (LayerCache layer : layers) {
            length = Math.min(length, layer.length());
        }
        return length;
    }

    /** @return positions every layer holds without growing */
    public int capacity() {
        int capacity = Integer.MAX_VALUE;
        for (LayerCache layer : layers) {
            capacity = Math.min(capacity, layer.capacity());
        }
        return capacity;
    }

    /**
     * @param layer the layer index
     * @return positions allocated in that layer's buffers (at most its window, if it has one)
     */
    public int layerCapacity(int layer) {
        return layers[layer].capacity();
    }

    /**
     * The absolute position of each key a layer with a sliding window attends over in a pass of
     * {@code t} new positions, in the order its {@link #update} returns them: the mask of such a
     * layer is built from these.
     *
     * @param window the layer's window
     * @param t new positions
     * @return the positions; {@code 0 .. length + t - 1} where no layer of this cache keeps a
     *     window of that size
     */
    public long[] windowKeyPositions(int window, int t) {
        int past = length();
        for (LayerCache layer : layers) {
            if (layer instanceof WindowLayerCache ring && ring.window() == window) {
                return WindowLayerCache.keyPositions(past, t, window);
            }
        }
        return WindowLayerCache.keyPositions(past, t, Integer.MAX_VALUE);
    }

    /** @return the most positions this cache can hold */
    public int maxCapacity() {
        return maxCapacity;
    }

    /** @return sequences in the batch */
    public int batchSize() {
        return batchSize;
    }

    /**
     * Forgets positions past {@code newLength} in every layer (e.g. to reuse a prompt prefix, or
     * to undo a forward pass that failed part way).
     *
     * @param newLength the positions to keep
     * @throws IllegalArgumentException if it is negative or more than {@link #length()}
     * @throws IllegalStateException if a sliding-window layer has already overwritten positions
     *     the next ones would need
     */
    public void truncate(int newLength) {
        int length = length();
        if (newLength < 0 || newLength > length) {
            throw new IllegalArgumentException("cannot truncate cache of " + length + " to " + newLength);
        }
        for (LayerCache layer : layers) {
            if (!layer.canTruncate(newLength)) {
                throw new IllegalStateException(
                        "cannot truncate cache of "
                                + length
                                + " to "
                                + newLength
                                + ": a sliding-window layer no longer holds the positions before it");
            }
        }
        for (LayerCache layer : layers) {
            layer.truncate(newLength);
        }
    }

    @Override
    public void close() {
        manager.close();
    }
}
