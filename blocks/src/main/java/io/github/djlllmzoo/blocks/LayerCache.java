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
 * <p>A decode step's one new position is handed to attention unwritten ({@link KeyValues#pending()}):
 * a kernel that reads the buffers writes it as it attends, and the cache writes it with the engine
 * before anything else reads or writes the buffers.
 *
 * <p>This is the per-layer policy of what a layer keeps: a layer that attends over a sliding window
 * keeps only the window's positions ({@link WindowLayerCache}).
 */
class LayerCache {

    /**
     * The element types of a layer's cache.
     *
     * @param compute the model's compute type, the one attention reads keys and values as
     * @param stored the buffers' type, which new keys and values are rounded to
     */
    record Types(DataType compute, DataType stored) {}

    private final NDManager manager;
    private final int maxCapacity;
    private final Types types;
    NDArray keys;
    NDArray values;
    private int length;
    /** The last decode step's keys and values, which a kernel may not have written yet. */
    private KeyValues unsettled;

    /**
     * @param manager the cache's manager, which owns the buffers
     * @param shape (B, H_kv, capacity, D) of the buffers to allocate
     * @param maxCapacity the most positions it may ever hold (the context window)
     * @param types the compute and stored element types
     */
    LayerCache(NDManager manager, Shape shape, int maxCapacity, Types types) {
        this.manager = manager;
        this.maxCapacity = maxCapacity;
        this.types = types;
        keys = manager.zeros(shape, types.stored());
        values = manager.zeros(shape, types.stored());
    }

    /**
     * @param x new keys or values in the compute type
     * @return them as the cache holds them: rounded to the stored type and widened back where the
     *     two differ (attention over new positions that are not read back from the buffers), else
     *     {@code x}
     */
    NDArray asStored(NDArray x) {
        if (types.stored() == types.compute()) {
            return x;
        }
        return x.toType(types.stored(), false).toType(types.compute(), false);
    }

    /** @return the type attention reads the keys and values as (the model's compute type) */
    DataType computeType() {
        return types.compute();
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
        settle();
        int t = Math.toIntExact(k.getShape().get(2));
        int end = length + t;
        checkContextWindow(end);
        ensureCapacity(end, maxCapacity, length);
        if (t == 1) {
            KeyValues kv = deferred(k, v, length, end);
            length = end;
            return kv;
        }
        NDIndex write = new NDIndex().addAllDim(2).addSliceDim(length, end); // [:, :, length:end]
        KeyValues.store(keys, write, k);
        KeyValues.store(values, write, v);
        length = end;
        return KeyValues.inBuffers(keys, values, end, k.getManager(), types.compute());
    }

    /**
     * @param viewManager the manager that gets the views
     * @return everything stored
     */
    KeyValues read(NDManager viewManager) {
        settle();
        return KeyValues.inBuffers(keys, values, length, viewManager, types.compute());
    }

    /**
     * @param newLength positions to keep, at most {@link #length()}
     * @return whether {@link #truncate} to it keeps everything the next positions need
     */
    boolean canTruncate(int newLength) {
        return true;
    }

    /**
     * Forgets positions past {@code newLength}.
     *
     * @param newLength the positions to keep, at most {@link #length()}
     */
    void truncate(int newLength) {
        settle();
        length = newLength;
    }

    /**
     * The buffers' first {@code filled} positions with {@code k} and {@code v} (B, H_kv, 1, D) still
     * to be written at {@code slot}.
     */
    KeyValues deferred(NDArray k, NDArray v, int slot, int filled) {
        KeyValues kv = KeyValues.withPending(new KeyValues.Pending(keys, values, k, v, slot), filled, k.getManager());
        unsettled = kv;
        return kv;
    }

    /**
     * Writes the last decode step's keys and values where no kernel did; those of a pass that
     * failed and freed them before attending are dropped (the caller truncates such a pass away).
     */
    void settle() {
        KeyValues kv = unsettled;
        if (kv == null) {
            return;
        }
        unsettled = null;
        KeyValues.Pending p = kv.pending();
        if (p != null && (p.keys().isReleased() || p.values().isReleased())) {
            kv.pendingWritten();
            return;
        }
        kv.settle();
    }

    /**
     * Makes room for {@code needed} slots, growing the buffers by doubling up to {@code limit}; the
     * first {@code filled} slots are kept.
     */
    void ensureCapacity(int needed, int limit, int filled) {
        settle();
        int capacity = capacity();
        if (needed <= capacity) {
            return;
        }
        int grown = Math.min(limit, Math.max(needed, capacity * 2));
        Shape shape = keys.getShape();
        Shape bigger = new Shape(shape.get(0), shape.get(1), grown, shape.get(3));
        keys = regrow(keys, bigger, filled);
        values = regrow(values, bigger, filled);
    }

    /** @throws IllegalStateException if {@code positions} exceed the context window */
    void checkContextWindow(int positions) {
        if (positions > maxCapacity) {
            throw new IllegalStateException(
                    "sequence of " + positions + " positions exceeds the context window of " + maxCapacity);
        }
    }

    private NDArray regrow(NDArray previous, Shape shape, int filled) {
        NDArray bigger = manager.zeros(shape, types.stored());
        if (filled > 0) {
            NDIndex kept = new NDIndex(":, :, :{}", filled);
            try (NDArray part = previous.get(kept)) {
                bigger.set(kept, part);
            }
        }
        previous.close();
        return bigger;
    }
}
