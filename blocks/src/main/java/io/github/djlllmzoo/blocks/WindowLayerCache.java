package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * The cache of a layer that attends over a sliding window of {@code W} positions (query {@code i}
 * sees keys {@code i-W+1 .. i}): a ring of at most {@code W} slots where position {@code p} lives in
 * slot {@code p mod W}, so the memory stays at the window however long the sequence grows. Keys are
 * stored after the rotary embedding, so the slots' order does not matter to attention; the mask
 * says which position each slot holds ({@link #keyPositions}).
 *
 * <p>A pass returns what its queries need: while the sequence fits the window, the filled slots in
 * order; a decode step past the window, all {@code W} slots after overwriting the oldest (exactly
 * the step's window); a pass of several new positions past the window, the slots as they were
 * followed by all the new positions, since its earlier queries need keys the later ones push out.
 */
final class WindowLayerCache extends LayerCache {

    private final int window;
    private int length;

    /**
     * @param manager the cache's manager, which owns the buffers
     * @param shape (B, H_kv, capacity, D) of the buffers to allocate (capped at the window)
     * @param window the positions a query sees, itself included
     * @param maxCapacity the most positions the sequence may ever reach (the context window)
     * @param types the compute and stored element types
     */
    WindowLayerCache(NDManager manager, Shape shape, int window, int maxCapacity, Types types) {
        super(
                manager,
                new Shape(shape.get(0), shape.get(1), Math.min(shape.get(2), window), shape.get(3)),
                maxCapacity,
                types);
        this.window = window;
    }

    /**
     * The absolute position of each key a pass of {@code t} new positions after {@code past}
     * attends over, in the order {@link #update} returns the keys.
     *
     * @param past positions stored before the pass
     * @param t new positions
     * @param window the window
     * @return the keys' positions
     */
    static long[] keyPositions(int past, int t, int window) {
        int end = past + t;
        if (end <= window) {
            return range(0, end);
        }
        if (t == 1) {
            return ring(past, window);
        }
        long[] old = past < window ? range(0, past) : ring(past - 1, window);
        long[] positions = new long[old.length + t];
        System.arraycopy(old, 0, positions, 0, old.length);
        for (int i = 0; i < t; i++) {
            positions[old.length + i] = past + i;
        }
        return positions;
    }

    /** The position in each slot of a full ring whose newest position is {@code last}. */
    private static long[] ring(int last, int window) {
        long[] positions = new long[window];
        for (int slot = 0; slot < window; slot++) {
            positions[slot] = last - Math.floorMod(last - slot, window);
        }
        return positions;
    }

    private static long[] range(int from, int to) {
        long[] positions = new long[to - from];
        for (int i = 0; i < positions.length; i++) {
            positions[i] = from + i;
        }
        return positions;
    }

    /** @return the positions a query sees, itself included */
    int window() {
        return window;
    }

    @Override
    int length() {
        return length;
    }

    @Override
    KeyValues update(NDArray k, NDArray v) {
        settle();
        int t = Math.toIntExact(k.getShape().get(2));
        int end = length + t;
        checkContextWindow(end);
        NDManager viewManager = k.getManager();
        if (end <= window) {
            ensureCapacity(end, window, length);
            if (t == 1) {
                KeyValues kv = deferred(k, v, length, end);
                length = end;
                return kv;
            }
            write(k, v, 0, length, t);
            length = end;
            return KeyValues.inBuffers(keys, values, end, viewManager, computeType());
        }
        if (t == 1) {
            KeyValues kv = deferred(k, v, length % window, window);
            length = end;
            return kv;
        }
        int kept = Math.min(length, window);
        NDArray attendedKeys = withOld(keys, kept, asStored(k)); // (B, H_kv, kept + T, D)
        NDArray attendedValues = withOld(values, kept, asStored(v));
        ensureCapacity(window, window, kept);
        int first = Math.max(length, end - window);
        int slot = first % window;
        int head = Math.min(end - first, window - slot);
        write(k, v, first - length, slot, head);
        write(k, v, first - length + head, 0, end - first - head);
        length = end;
        return KeyValues.of(attendedKeys, attendedValues);
    }

    /**
     * The first {@code kept} slots of {@code buffer} (widened to fresh's type) followed by {@code
     * fresh}, on fresh's manager.
     */
    private static NDArray withOld(NDArray buffer, int kept, NDArray fresh) {
        if (kept == 0) {
            return fresh;
        }
        NDArray old = buffer.get(new NDIndex(":, :, :{}", kept)); // (B, H_kv, kept, D)
        old.attach(fresh.getManager());
        if (old.getDataType() != fresh.getDataType()) {
            old = old.toType(fresh.getDataType(), false);
        }
        return old.concat(fresh, 2);
    }

    /** Writes {@code count} new positions from index {@code from} of k, v into slots from {@code slot}. */
    private void write(NDArray k, NDArray v, int from, int slot, int count) {
        if (count == 0) {
            return;
        }
        int t = Math.toIntExact(k.getShape().get(2));
        NDIndex target = new NDIndex().addAllDim(2).addSliceDim(slot, slot + count);
        if (from == 0 && count == t) {
            KeyValues.store(keys, target, k);
            KeyValues.store(values, target, v);
            return;
        }
        NDIndex source = new NDIndex().addAllDim(2).addSliceDim(from, from + count);
        try (NDArray kPart = k.get(source);
                NDArray vPart = v.get(source)) {
            KeyValues.store(keys, target, kPart);
            KeyValues.store(values, target, vPart);
        }
    }

    @Override
    KeyValues read(NDManager viewManager) {
        settle();
        return KeyValues.inBuffers(keys, values, Math.min(length, window), viewManager, computeType());
    }

    @Override
    boolean canTruncate(int newLength) {
        // the next query, at newLength, needs newLength-W+1 .. newLength-1; writes past newLength
        // overwrote the positions before length-W
        return newLength == length || Math.max(0, newLength - window + 1) >= Math.max(0, length - window);
    }

    @Override
    void truncate(int newLength) {
        settle();
        length = newLength;
    }
}
