package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;

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
 *
 * <p>A decode step's new keys and values may reach the buffers late: the cache hands them over
 * {@link #pending()}, and a kernel that attends over the buffers writes them there as it goes (one
 * native call instead of two indexed engine writes) and says so ({@link #pendingWritten()}).
 * Everything else that reads the buffers ({@link #keyBuffer()}, {@link #keys()}, the cache's next
 * update) writes them with the engine first, so no reader sees a position unwritten.
 */
public final class KeyValues {

    /**
     * New keys and values not yet in a cache's buffers: they belong at positions {@code [slot, slot
     * + T)} of each (B, H_kv, capacity, D) buffer, or, where each row is at a length of its own (a
     * {@link SlotKvCache}'s decode step, T = 1), row {@code b}'s at {@code rowSlots[b]}.
     *
     * @param keyBuffer the cache's key buffer
     * @param valueBuffer the cache's value buffer
     * @param keys the new keys (B, H_kv, T, D)
     * @param values the new values (B, H_kv, T, D)
     * @param slot the buffers' position of their first, where every row shares it; -1 with {@code
     *     rowSlots}
     * @param rowSlots each row's position of its one new key and value, or {@code null} where every
     *     row writes at {@code slot}
     */
    public record Pending(
            NDArray keyBuffer, NDArray valueBuffer, NDArray keys, NDArray values, int slot, int[] rowSlots) {

        /**
         * New keys and values that every row writes at the same position.
         *
         * @param keyBuffer the cache's key buffer
         * @param valueBuffer the cache's value buffer
         * @param keys the new keys (B, H_kv, T, D)
         * @param values the new values (B, H_kv, T, D)
         * @param slot the buffers' position of their first
         */
        public Pending(NDArray keyBuffer, NDArray valueBuffer, NDArray keys, NDArray values, int slot) {
            this(keyBuffer, valueBuffer, keys, values, slot, null);
        }

        /**
         * @param row a row of the batch
         * @return the buffers' position of that row's first new key and value
         */
        public int slotOf(int row) {
            return rowSlots == null ? slot : rowSlots[row];
        }

        /** Writes them into the buffers with the engine. */
        void write() {
            long t = keys.getShape().get(2);
            if (rowSlots == null) {
                NDIndex target = new NDIndex().addAllDim(2).addSliceDim(slot, slot + t); // [:, :, slot:slot+T]
                store(keyBuffer, target, keys);
                store(valueBuffer, target, values);
                return;
            }
            for (int b = 0; b < rowSlots.length; b++) {
                NDIndex target = new NDIndex("{}, :, {}:{}", b, rowSlots[b], rowSlots[b] + t); // [b, :, s:s+T]
                try (NDArray k = keys.get(b);
                        NDArray v = values.get(b)) {
                    store(keyBuffer, target, k);
                    store(valueBuffer, target, v);
                }
            }
        }
    }

    private final NDArray keyBuffer;
    private final NDArray valueBuffer;
    private final int length;
    private int[] rowLengths;
    private final NDManager viewManager;
    /** The type {@link #keys()} and {@link #values()} are read as: the model's compute type. */
    private final DataType readType;
    private NDArray keys;
    private NDArray values;
    private Pending pending;

    private KeyValues(NDArray keyBuffer, NDArray valueBuffer, int length, NDManager viewManager, DataType readType,
            NDArray keys, NDArray values) {
        this.keyBuffer = keyBuffer;
        this.valueBuffer = valueBuffer;
        this.length = length;
        this.viewManager = viewManager;
        this.readType = readType;
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
        return new KeyValues(null, null, length, keys.getManager(), keys.getDataType(), keys, values);
    }

    /**
     * The first {@code length} positions of a cache layer's buffers.
     *
     * @param keyBuffer (B, H_kv, capacity, D), owned by the cache
     * @param valueBuffer (B, H_kv, capacity, D), owned by the cache
     * @param length the positions filled
     * @param viewManager the manager that gets the views of {@link #keys()} and {@link #values()}
     * @param readType the type {@link #keys()} and {@link #values()} are read as (the buffers'
     *     widened to it where it differs)
     * @return the filled part
     */
    static KeyValues inBuffers(
            NDArray keyBuffer, NDArray valueBuffer, int length, NDManager viewManager, DataType readType) {
        return new KeyValues(keyBuffer, valueBuffer, length, viewManager, readType, null, null);
    }

    /**
     * Writes {@code rows} into {@code buffer}'s {@code target} positions, rounded to the buffer's
     * element type where theirs differs (a float16 cache of a float32 model: round to nearest, ties
     * to even, as the engine converts and as the kernels' vcvtps2ph does).
     *
     * @param buffer a cache's buffer
     * @param target the positions written
     * @param rows the keys or values, of the target's shape
     */
    static void store(NDArray buffer, NDIndex target, NDArray rows) {
        if (rows.getDataType() == buffer.getDataType()) {
            buffer.set(target, rows);
            return;
        }
        try (NDArray rounded = rows.toType(buffer.getDataType(), false)) {
            buffer.set(target, rounded);
        }
    }

    /**
     * The first {@code length} positions of a cache layer's buffers, the newest of which are still
     * to be written ({@link #pending()}).
     *
     * @param pending the new keys and values and where they go
     * @param length the positions filled, the pending ones included
     * @param viewManager the manager that gets the views of {@link #keys()} and {@link #values()}
     * @return the filled part
     */
    static KeyValues withPending(Pending pending, int length, NDManager viewManager) {
        KeyValues kv = new KeyValues(pending.keyBuffer(), pending.valueBuffer(), length, viewManager,
                pending.keys().getDataType(), null, null);
        kv.pending = pending;
        return kv;
    }

    /**
     * The first positions of a cache's buffers whose rows each hold a length of their own (a {@link
     * SlotKvCache}'s decode step): row {@code b} attends over its first {@code rowLengths[b]}
     * positions, the mask handed with them hiding the rest from the engine's operations.
     *
     * @param pending the new keys and values and where each row's goes
     * @param rowLengths each row's positions, the pending one included
     * @param viewManager the manager that gets the views of {@link #keys()} and {@link #values()}
     * @return the filled part, {@link #length()} the longest row's
     */
    static KeyValues withRowLengths(Pending pending, int[] rowLengths, NDManager viewManager) {
        int longest = 0;
        for (int length : rowLengths) {
            longest = Math.max(longest, length);
        }
        KeyValues kv = withPending(pending, longest, viewManager);
        kv.rowLengths = rowLengths;
        return kv;
    }

    /**
     * @return each row's positions where the rows differ ({@link #length()} the longest, the mask
     *     hiding what lies past each), or {@code null} where every row holds {@link #length()}
     */
    public int[] rowLengths() {
        return rowLengths;
    }

    /**
     * @return the new keys and values a kernel reading the buffers has still to write, or {@code
     *     null} where the buffers hold every position
     */
    public Pending pending() {
        return pending;
    }

    /** Says that a kernel wrote the {@link #pending()} keys and values into the buffers. */
    public void pendingWritten() {
        pending = null;
    }

    /** Writes the pending keys and values with the engine, where no kernel wrote them. */
    void settle() {
        Pending p = pending;
        if (p != null) {
            pending = null;
            p.write();
        }
    }

    /**
     * @return the keys (B, H_kv, S, D); from a cache, a view of its buffer, or where the cache
     *     stores another type than the model computes in (a float16 cache), a copy widened to the
     *     compute type
     */
    public NDArray keys() {
        if (keys == null) {
            settle();
            keys = filled(keyBuffer);
        }
        return keys;
    }

    /** @return the values (B, H_kv, S, D), as {@link #keys()} are the keys */
    public NDArray values() {
        if (values == null) {
            settle();
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
     *     are the keys (the pending ones written first), or {@code null} where the keys are not in
     *     a cache
     */
    public NDArray keyBuffer() {
        settle();
        return keyBuffer;
    }

    /** @return the cache's buffer of the values, as {@link #keyBuffer()} is of the keys */
    public NDArray valueBuffer() {
        settle();
        return valueBuffer;
    }

    /** @return whether the keys and values are the first {@link #length()} positions of a cache's buffers */
    public boolean inCache() {
        return keyBuffer != null;
    }

    /**
     * A view of the first {@code length} positions, widened to {@link #readType} where the buffer
     * holds another type; a split makes it in one engine call where an index takes several.
     */
    private NDArray filled(NDArray buffer) {
        NDList parts = buffer.split(new long[] {length}, 2); // [:, :, :length], [:, :, length:]
        parts.get(1).close();
        NDArray view = parts.get(0);
        if (view.getDataType() != readType) {
            NDArray widened = view.toType(readType, false);
            view.close();
            view = widened;
        }
        view.attach(viewManager);
        return view;
    }

    /** @return whether the cache's buffers hold another element type than attention computes in */
    public boolean storesOtherType() {
        return keyBuffer != null && keyBuffer.getDataType() != readType;
    }
}
