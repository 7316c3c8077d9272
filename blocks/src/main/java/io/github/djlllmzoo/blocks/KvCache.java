package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * The keys and values of every layer for the tokens seen so far, preallocated as (B, H_kv,
 * capacity, D) per layer and written in place: a decode step writes one position and reads a view
 * of the filled part, never copying the cache. When a sequence outgrows the capacity the buffers
 * grow by doubling (amortized, up to the model's context window).
 *
 * <p>Only key/value heads are stored, so grouped-query models keep a cache {@code H / H_kv} times
 * smaller. The cache owns its arrays through its own manager; {@link #close()} frees them.
 */
public final class KvCache implements AutoCloseable {

    private final NDManager manager;
    private final int batchSize;
    private final int numKvHeads;
    private final int headDim;
    private final int maxCapacity;
    private final DataType dataType;
    private final NDArray[] keys;
    private final NDArray[] values;
    private int capacity;
    private int length;

    /**
     * Allocates an empty cache.
     *
     * @param parent the manager whose device holds the cache; the cache makes a sub-manager
     * @param numLayers decoder layers
     * @param batchSize sequences in the batch
     * @param numKvHeads key/value heads per layer
     * @param headDim width of one head
     * @param capacity positions to allocate up front
     * @param maxCapacity the most positions it may ever hold (the context window)
     * @param dataType the element type (the model's compute type)
     */
    public KvCache(
            NDManager parent,
            int numLayers,
            int batchSize,
            int numKvHeads,
            int headDim,
            int capacity,
            int maxCapacity,
            DataType dataType) {
        if (capacity <= 0 || capacity > maxCapacity) {
            throw new IllegalArgumentException(
                    "KV cache capacity " + capacity + " must be in [1, " + maxCapacity + "]");
        }
        this.manager = parent.newSubManager();
        this.batchSize = batchSize;
        this.numKvHeads = numKvHeads;
        this.headDim = headDim;
        this.maxCapacity = maxCapacity;
        this.dataType = dataType;
        this.capacity = capacity;
        this.keys = new NDArray[numLayers];
        this.values = new NDArray[numLayers];
        Shape shape = new Shape(batchSize, numKvHeads, capacity, headDim);
        for (int i = 0; i < numLayers; i++) {
            keys[i] = manager.zeros(shape, dataType);
            values[i] = manager.zeros(shape, dataType);
        }
    }

    /** @return positions already stored (the same for every layer once a step completes) */
    public int length() {
        return length;
    }

    /** @return positions allocated */
    public int capacity() {
        return capacity;
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
     * Writes one layer's keys and values for the new positions {@code [length, length + T)} and
     * returns views of everything stored for that layer, attached to the manager of {@code k}.
     *
     * @param layer the layer index
     * @param k new keys (B, H_kv, T, D)
     * @param v new values (B, H_kv, T, D)
     * @return keys and values (B, H_kv, length + T, D)
     */
    public NDList append(int layer, NDArray k, NDArray v) {
        return views(layer, write(layer, k, v), k.getManager());
    }

    /**
     * Writes one layer's keys and values for the new positions {@code [length, length + T)}, as
     * {@link #append} does, without making views.
     *
     * @param layer the layer index
     * @param k new keys (B, H_kv, T, D)
     * @param v new values (B, H_kv, T, D)
     * @return the positions the layer now holds, {@code length + T}
     */
    int write(int layer, NDArray k, NDArray v) {
        int end = length + Math.toIntExact(k.getShape().get(2));
        ensureCapacity(end);
        NDIndex write = new NDIndex().addAllDim(2).addSliceDim(length, end); // [:, :, length:end]
        keys[layer].set(write, k);
        values[layer].set(write, v);
        return end;
    }

    /**
     * @param layer the layer index
     * @return the layer's key buffer (B, H_kv, capacity, D), owned by the cache
     */
    NDArray keyBuffer(int layer) {
        return keys[layer];
    }

    /**
     * @param layer the layer index
     * @return the layer's value buffer (B, H_kv, capacity, D), owned by the cache
     */
    NDArray valueBuffer(int layer) {
        return values[layer];
    }

    /**
     * Views of the first {@code end} positions of one layer, attached to {@code manager}.
     *
     * @param layer the layer index
     * @param end the positions to view
     * @param manager the manager to attach the views to
     * @return keys and values (B, H_kv, end, D)
     */
    NDList views(int layer, int end, NDManager manager) {
        return new NDList(filled(keys[layer], end, manager), filled(values[layer], end, manager));
    }

    /**
     * A view of the first {@code end} positions of a buffer, attached to {@code manager}; a split
     * makes it in one engine call where an index takes several.
     *
     * @param buffer a (B, H_kv, capacity, D) buffer
     * @param end the positions to view
     * @param manager the manager to attach the view to
     * @return the view (B, H_kv, end, D)
     */
    private static NDArray filled(NDArray buffer, int end, NDManager manager) {
        NDList parts = buffer.split(new long[] {end}, 2); // [:, :, :end], [:, :, end:]
        parts.get(1).close();
        NDArray view = parts.get(0);
        view.attach(manager);
        return view;
    }

    /**
     * Views of everything stored for one layer, e.g. to hand the cache to code that takes past
     * keys and values as arrays.
     *
     * @param layer the layer index
     * @param manager the manager the views are attached to
     * @return keys and values (B, H_kv, length, D)
     */
    public NDList stored(int layer, NDManager manager) {
        NDIndex read = new NDIndex(":, :, :{}", length);
        NDArray k = keys[layer].get(read);
        NDArray v = values[layer].get(read);
        k.attach(manager);
        v.attach(manager);
        return new NDList(k, v);
    }

    /**
     * Marks {@code t} more positions as stored; called once per forward, after every layer
     * appended.
     *
     * @param t the number of new positions
     */
    public void advance(int t) {
        length += t;
    }

    /**
     * Forgets positions past {@code newLength} (e.g. to reuse a prompt prefix).
     *
     * @param newLength the positions to keep
     */
    public void truncate(int newLength) {
        if (newLength < 0 || newLength > length) {
            throw new IllegalArgumentException("cannot truncate cache of " + length + " to " + newLength);
        }
        length = newLength;
    }

    private void ensureCapacity(int needed) {
        if (needed <= capacity) {
            return;
        }
        if (needed > maxCapacity) {
            throw new IllegalStateException(
                    "sequence of " + needed + " positions exceeds the context window of " + maxCapacity);
        }
        int grown = Math.min(maxCapacity, Math.max(needed, capacity * 2));
        Shape shape = new Shape(batchSize, numKvHeads, grown, headDim);
        NDIndex old = new NDIndex(":, :, :{}", length);
        for (int i = 0; i < keys.length; i++) {
            keys[i] = regrow(keys[i], shape, old);
            values[i] = regrow(values[i], shape, old);
        }
        capacity = grown;
    }

    private NDArray regrow(NDArray previous, Shape shape, NDIndex filled) {
        NDArray bigger = manager.zeros(shape, dataType);
        if (length > 0) {
            try (NDArray part = previous.get(filled)) {
                bigger.set(filled, part);
            }
        }
        previous.close();
        return bigger;
    }

    @Override
    public void close() {
        manager.close();
    }
}
