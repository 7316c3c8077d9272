package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * One layer's part of a {@link KvCache}: its keys and values preallocated as (B, H_kv, capacity, D)
 * and written in place, every position the sequence has seen kept. When the sequence outgrows the
 * capacity the buffers grow by doubling (amortized, up to the context window).
 *
 * <p>This is the per-layer policy of what a layer keeps: a layer that attends over a sliding window
 * would keep only the window's positions in a cache of its own kind, chosen per layer.
 */
final class LayerCache {

    private final NDManager manager;
    private final int maxCapacity;
    private final DataType dataType;
    private NDArray keys;
    private NDArray values;
    private int length;

    /**
     * @param manager the cache's manager, which owns the buffers
     * @param shape (B, H_kv, capacity, D) of the buffers to allocate
     * @param maxCapacity the most positions it may ever hold (the context window)
     * @param dataType the element type
     */
    LayerCache(NDManager manager, Shape shape, int maxCapacity, DataType dataType) {
        this.manager = manager;
        this.maxCapacity = maxCapacity;
        this.dataType = dataType;
        keys = manager.zeros(shape, dataType);
        values = manager.zeros(shape, dataType);
    }

    /** @return positions stored */
    int length() {
        return length;
    }

    /** @return positions allocated */
    int capacity() {
        return Math.toIntExact(keys.getShape().get(2));
    }

    /**
     * Writes the new positions {@code [length, length + T)} and counts them as stored.
     *
     * @param k new keys (B, H_kv, T, D)
     * @param v new values (B, H_kv, T, D)
     * @return everything stored, the new positions included; views attached to {@code k}'s manager
     */
    KeyValues update(NDArray k, NDArray v) {
        int end = length + Math.toIntExact(k.getShape().get(2));
        ensureCapacity(end);
        NDIndex write = new NDIndex().addAllDim(2).addSliceDim(length, end); // [:, :, length:end]
        keys.set(write, k);
        values.set(write, v);
        length = end;
        return KeyValues.inBuffers(keys, values, end, k.getManager());
    }

    /**
     * @param viewManager the manager that gets the views
     * @return everything stored
     */
    KeyValues read(NDManager viewManager) {
        return KeyValues.inBuffers(keys, values, length, viewManager);
    }

    /**
     * Forgets positions past {@code newLength}.
     *
     * @param newLength the positions to keep, at most {@link #length()}
     */
    void truncate(int newLength) {
        length = newLength;
    }

    private void ensureCapacity(int needed) {
        int capacity = capacity();
        if (needed <= capacity) {
            return;
        }
        if (needed > maxCapacity) {
            throw new IllegalStateException(
                    "sequence of " + needed + " positions exceeds the context window of " + maxCapacity);
        }
        int grown = Math.min(maxCapacity, Math.max(needed, capacity * 2));
        Shape shape = keys.getShape();
        Shape bigger = new Shape(shape.get(0), shape.get(1), grown, shape.get(3));
        NDIndex filled = new NDIndex(":, :, :{}", length);
        keys = regrow(keys, bigger, filled);
        values = regrow(values, bigger, filled);
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
}
