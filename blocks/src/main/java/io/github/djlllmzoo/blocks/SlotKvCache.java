package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.Arrays;

/**
 * A KV cache whose rows (slots) each hold a sequence at a length of its own, for a decode loop that
 * lets sequences join and leave at any step (continuous batching): each layer keeps (rows, H_kv,
 * capacity, D) buffers and the cache an {@code int[]} of lengths. A decode step over the first
 * {@code n} rows ({@link #decodePass}) writes row {@code r}'s new key and value at {@code
 * lengths[r]} and attends over that row's own positions (the kernel reads each row's length, the
 * engine's operations a mask that hides what lies past it); a prompt is written into one row a chunk
 * at a time ({@link #prefillPass}). The rows in use are kept in {@code [0, n)} by the caller ({@link
 * #move} fills a freed row with the last one), so a step reads one contiguous part of the buffers.
 *
 * <p>Every layer keeps every position, sliding-window layers too: the window is applied by the
 * mask. A ring per row would need its own {@code p mod W} slot per row in every kernel, and the
 * loop's token budget already bounds what a row may hold.
 *
 * <p>The buffers are allocated on demand ({@link #reserve}) and grow (rows and capacity) keeping
 * what they hold; {@link #free} drops them when no row is in use. Not thread-safe: one loop owns it.
 */
public final class SlotKvCache implements AutoCloseable {

    private final NDManager manager;
    private final int numLayers;
    private final int numKvHeads;
    private final int headDim;
    private final int maxCapacity;
    private final DataType dataType;
    private final DataType storedType;
    private final NDArray[] keys;
    private final NDArray[] values;
    /** Each layer's last decode step, whose new keys and values a kernel may not have written yet. */
    private final KeyValues[] unsettled;
    /**
     * Views of the first {@link #viewRows} rows of each layer's buffers, kept from one decode step to
     * the next while the rows decoding and the buffers stay the same: with rows beside the decoding
     * ones (prompts prefilled ahead) every step reads a part of the buffers, and making its views
     * anew took two engine calls per layer and buffer a step.
     */
    private final NDArray[] keyViews;
    private final NDArray[] valueViews;
    private int viewRows;
    private int[] lengths = new int[0];
    private int rows;
    private int capacity;

    /**
     * Makes an empty cache; nothing is allocated until {@link #reserve}.
     *
     * @param parent the manager whose device holds the cache; the cache makes a sub-manager
     * @param numLayers layers of the model
     * @param numKvHeads key/value heads per layer
     * @param headDim width of one head
     * @param maxCapacity the most positions a row may ever hold (the context window)
     * @param dataType the element type (the model's compute type)
     */
    public SlotKvCache(
            NDManager parent, int numLayers, int numKvHeads, int headDim, int maxCapacity, DataType dataType) {
        this(parent, numLayers, numKvHeads, headDim, maxCapacity, dataType, dataType);
    }

    /**
     * Makes an empty cache that stores keys and values in a type of its own ({@link KvCacheDtype}):
     * they are rounded to it as they are stored, and attention reads them as {@code dataType}.
     *
     * @param parent the manager whose device holds the cache; the cache makes a sub-manager
     * @param numLayers layers of the model
     * @param numKvHeads key/value heads per layer
     * @param headDim width of one head
     * @param maxCapacity the most positions a row may ever hold (the context window)
     * @param dataType the model's compute type
     * @param storedType the element type of the buffers (and of {@link #newPositionStore}'s arrays)
     */
    public SlotKvCache(NDManager parent, int numLayers, int numKvHeads, int headDim, int maxCapacity,
            DataType dataType, DataType storedType) {
        if (numLayers < 1 || numKvHeads < 1 || headDim < 1 || maxCapacity < 1) {
            throw new IllegalArgumentException("a slot cache needs layers, heads, a head width and a capacity, got "
                    + numLayers + ", " + numKvHeads + ", " + headDim + ", " + maxCapacity);
        }
        this.manager = parent.newSubManager();
        this.numLayers = numLayers;
        this.numKvHeads = numKvHeads;
        this.headDim = headDim;
        this.maxCapacity = maxCapacity;
        this.dataType = dataType;
        this.storedType = storedType;
        this.keys = new NDArray[numLayers];
        this.values = new NDArray[numLayers];
        this.unsettled = new KeyValues[numLayers];
        this.keyViews = new NDArray[numLayers];
        this.valueViews = new NDArray[numLayers];
    }

    /** @return rows allocated */
    public int rows() {
        return rows;
    }

    /** @return positions allocated per row */
    public int capacity() {
        return capacity;
    }

    /** @return the most positions a row may ever hold */
    public int maxCapacity() {
        return maxCapacity;
    }

    /**
     * @param row a row
     * @return the positions it holds
     */
    public int length(int row) {
        return lengths[row];
    }

    /** @return bytes one position of one row takes over all layers (keys and values) */
    public long bytesPerPosition() {
        return 2L * numLayers * numKvHeads * headDim * storedType.getNumOfBytes();
    }

    /**
     * Makes room for at least {@code rows} rows of {@code capacity} positions, keeping what the rows
     * hold.
     *
     * @param rows rows needed
     * @param capacity positions needed per row, at most {@link #maxCapacity()}
     */
    public void reserve(int rows, int capacity) {
        if (capacity > maxCapacity) {
            throw new IllegalArgumentException(
                    "a row of " + capacity + " positions exceeds the context window of " + maxCapacity);
        }
        if (rows <= this.rows && capacity <= this.capacity) {
            return;
        }
        settleAll();
        dropViews();
        int grownRows = Math.max(rows, this.rows);
        int grownCapacity = Math.max(capacity, this.capacity);
        Shape shape = new Shape(grownRows, numKvHeads, grownCapacity, headDim);
        for (int layer = 0; layer < numLayers; layer++) {
            keys[layer] = regrow(keys[layer], shape);
            values[layer] = regrow(values[layer], shape);
        }
        lengths = Arrays.copyOf(lengths, grownRows);
        this.rows = grownRows;
        this.capacity = grownCapacity;
    }

    private NDArray regrow(NDArray previous, Shape shape) {
        NDArray bigger = manager.zeros(shape, storedType);
        if (previous != null) {
            NDIndex kept = new NDIndex(":{}, :, :{}", this.rows, this.capacity);
            bigger.set(kept, previous);
            previous.close();
        }
        return bigger;
    }

    /** Frees the buffers (every row forgotten); the next {@link #reserve} allocates afresh. */
    public void free() {
        Arrays.fill(unsettled, null);
        dropViews();
        for (int layer = 0; layer < numLayers; layer++) {
            if (keys[layer] != null) {
                keys[layer].close();
                values[layer].close();
                keys[layer] = null;
                values[layer] = null;
            }
        }
        lengths = new int[0];
        rows = 0;
        capacity = 0;
    }

    /**
     * Forgets what a row holds.
     *
     * @param row the row
     */
    public void clear(int row) {
        lengths[row] = 0;
    }

    /**
     * Moves row {@code from}'s positions into row {@code to} (whose own are forgotten) and clears
     * {@code from}: a row that leaves is filled by the last one, so the rows in use stay contiguous.
     *
     * @param from the row to move
     * @param to the row it goes to
     */
    public void move(int from, int to) {
        if (from == to) {
            return;
        }
        settleAll();
        int length = lengths[from];
        if (length > 0) {
            NDIndex source = new NDIndex("{}, :, :{}", from, length); // (H_kv, length, D)
            NDIndex target = new NDIndex("{}, :, :{}", to, length);
            for (int layer = 0; layer < numLayers; layer++) {
                try (NDArray k = keys[layer].get(source);
                        NDArray v = values[layer].get(source)) {
                    keys[layer].set(target, k);
                    values[layer].set(target, v);
                }
            }
        }
        lengths[to] = length;
        lengths[from] = 0;
    }

    /** {@code buffer[target] = source[part]}, leaving {@code source} as it is. */
    private static void setFrom(NDArray buffer, NDIndex target, NDArray source, NDIndex part) {
        NDArray view = source.get(part);
        try {
            buffer.set(target, view);
        } finally {
            if (view != source) { // an index that takes everything may answer the array itself
                view.close();
            }
        }
    }

    /**
     * A store of positions outside the rows, for what is kept between sequences (a prefix cache):
     * each layer's keys then values, (H_kv, positions, D) in the cache's stored element type, written by
     * {@link #copyOut} and read back by {@link #appendFrom}. Made once and reused, what it keeps
     * comes and goes without allocating: arrays made and freed per kept prompt, of every prompt's
     * size and freed in another order than made, left holes in the allocator's heap that it kept
     * (docs/serving-production.md, memory over thousands of requests).
     *
     * @param positions positions the store holds
     * @param target the manager the arrays are attached to
     * @return {@code 2 * layers} arrays of (H_kv, positions, D)
     */
    public NDArray[] newPositionStore(int positions, NDManager target) {
        if (positions < 1) {
            throw new IllegalArgumentException("a position store needs at least 1 position, got " + positions);
        }
        NDArray[] store = new NDArray[2 * numLayers];
        Shape shape = new Shape(numKvHeads, positions, headDim);
        for (int i = 0; i < store.length; i++) {
            store[i] = target.zeros(shape, storedType);
        }
        return store;
    }

    /**
     * Copies positions {@code [from, from + length)} of a row to positions {@code [at, at + length)}
     * of a store ({@link #newPositionStore}).
     *
     * @param row the row
     * @param from its first position copied
     * @param length positions to copy, within what the row holds
     * @param store the store
     * @param at where they go in the store
     */
    public void copyOut(int row, int from, int length, NDArray[] store, int at) {
        if (from < 0 || length < 1 || from + length > lengths[row] || store.length != 2 * numLayers) {
            throw new IllegalArgumentException("cannot copy positions " + from + " to " + (from + length)
                    + " of row " + row + ", which holds " + lengths[row]);
        }
        settleAll();
        NDIndex source = new NDIndex("{}, :, {}:{}", row, from, from + length); // (H_kv, length, D)
        NDIndex target = new NDIndex(":, {}:{}", at, at + length);
        for (int layer = 0; layer < numLayers; layer++) {
            setFrom(store[2 * layer], target, keys[layer], source);
            setFrom(store[2 * layer + 1], target, values[layer], source);
        }
    }

    /**
     * Appends positions {@code [at, at + length)} of a store ({@link #newPositionStore}) to a row,
     * which then continues from them as if it had computed them.
     *
     * @param row the row
     * @param store the store
     * @param at the store's first position appended
     * @param length positions to append, within the row's capacity
     */
    public void appendFrom(int row, NDArray[] store, int at, int length) {
        int past = lengths[row];
        if (length < 1 || past + length > capacity || store.length != 2 * numLayers) {
            throw new IllegalArgumentException("cannot append " + length + " positions to row " + row
                    + " holding " + past + " of " + capacity);
        }
        settleAll();
        NDIndex target = new NDIndex("{}, :, {}:{}", row, past, past + length);
        NDIndex source = new NDIndex(":, {}:{}", at, at + length); // (H_kv, length, D)
        for (int layer = 0; layer < numLayers; layer++) {
            setFrom(keys[layer], target, store[2 * layer], source);
            setFrom(values[layer], target, store[2 * layer + 1], source);
        }
        lengths[row] = past + length;
    }

    /**
     * The store of a decode step over rows {@code [0, n)}, one new position each: row {@code r}'s at
     * {@code length(r)}. {@link #commitDecode} counts them once the pass succeeds.
     *
     * @param n rows in the step
     * @return what the step's layers update
     */
    public KeyValueStore decodePass(int n) {
        if (n < 1 || n > rows) {
            throw new IllegalArgumentException("a decode step over " + n + " of " + rows + " rows");
        }
        int[] slots = Arrays.copyOf(lengths, n);
        int[] rowLengths = new int[n];
        for (int r = 0; r < n; r++) {
            if (slots[r] >= capacity) {
                throw new IllegalStateException(
                        "row " + r + " of " + slots[r] + " positions has no room left of " + capacity);
            }
            rowLengths[r] = slots[r] + 1;
        }
        return (layer, k, v) -> {
            settle(layer);
            NDArray keyRows = firstRows(keys, keyViews, layer, n); // (n, H_kv, capacity, D)
            NDArray valueRows = firstRows(values, valueViews, layer, n);
            KeyValues kv = KeyValues.withRowLengths(
                    new KeyValues.Pending(keyRows, valueRows, k, v, -1, slots), rowLengths, k.getManager());
            unsettled[layer] = kv;
            return kv;
        };
    }

    /**
     * The store of a pass over the next {@code t} positions of one row (a prompt's chunk).
     * {@link #commitPrefill} counts them once the pass succeeds.
     *
     * @param row the row
     * @param t new positions
     * @return what the pass's layers update
     */
    public KeyValueStore prefillPass(int row, int t) {
        int past = lengths[row];
        int end = past + t;
        if (row >= rows || end > capacity) {
            throw new IllegalStateException(
                    "row " + row + " cannot take " + t + " positions after " + past + " in " + rows + " x " + capacity);
        }
        return (layer, k, v) -> {
            settle(layer);
            NDArray keyRow = oneRow(keys[layer], row, k.getManager()); // (1, H_kv, capacity, D)
            NDArray valueRow = oneRow(values[layer], row, k.getManager());
            NDIndex write = new NDIndex().addAllDim(2).addSliceDim(past, end); // [:, :, past:end]
            KeyValues.store(keyRow, write, k);
            KeyValues.store(valueRow, write, v);
            return KeyValues.inBuffers(keyRow, valueRow, end, k.getManager(), dataType);
        };
    }

    /**
     * Counts a decode step's positions as stored.
     *
     * @param n rows of the step
     */
    public void commitDecode(int n) {
        for (int r = 0; r < n; r++) {
            lengths[r]++;
        }
    }

    /**
     * Counts a prefill pass's positions as stored.
     *
     * @param row the row
     * @param t positions of the pass
     */
    public void commitPrefill(int row, int t) {
        lengths[row] += t;
    }

    /**
     * @param n rows
     * @return the lengths of rows {@code [0, n)}
     */
    public int[] lengths(int n) {
        return Arrays.copyOf(lengths, n);
    }

    /**
     * A view of the first {@code n} rows of a layer's buffer, kept on the cache's manager until the
     * rows decoding change or the buffers are made anew; the buffer itself for all rows.
     */
    private NDArray firstRows(NDArray[] buffers, NDArray[] views, int layer, int n) {
        if (n == rows) {
            return buffers[layer];
        }
        if (n != viewRows) {
            settleAll(); // the last step's pending writes may still go through the views dropped here
            dropViews();
            viewRows = n;
        }
        if (views[layer] == null) {
            NDList parts = buffers[layer].split(new long[] {n}, 0); // [:n], [n:]
            parts.get(1).close();
            views[layer] = parts.get(0); // on the buffer's manager, the cache's
        }
        return views[layer];
    }

    /**
     * Frees the views the decode steps kept of the rows they read (made anew by the next one): a
     * loop with no row decoding holds nothing but the buffers.
     */
    public void releaseViews() {
        settleAll();
        dropViews();
    }

    private void dropViews() {
        for (int layer = 0; layer < numLayers; layer++) {
            for (NDArray[] views : new NDArray[][] {keyViews, valueViews}) {
                if (views[layer] != null) {
                    views[layer].close();
                    views[layer] = null;
                }
            }
        }
        viewRows = 0;
    }

    private NDArray oneRow(NDArray buffer, int row, NDManager viewManager) {
        if (rows == 1) {
            return buffer;
        }
        NDList parts = buffer.split(new long[] {row, row + 1}, 0); // [:row], [row], [row+1:]
        parts.get(0).close();
        parts.get(2).close();
        NDArray view = parts.get(1);
        view.attach(viewManager);
        return view;
    }

    /**
     * Writes a layer's last decode step where no kernel did; that of a pass that failed and freed
     * its arrays is dropped (its lengths were never committed).
     */
    private void settle(int layer) {
        KeyValues kv = unsettled[layer];
        if (kv == null) {
            return;
        }
        unsettled[layer] = null;
        KeyValues.Pending p = kv.pending();
        if (p == null) {
            return;
        }
        if (p.keys().isReleased() || p.values().isReleased() || p.keyBuffer().isReleased()) {
            kv.pendingWritten();
            return;
        }
        kv.settle();
    }

    private void settleAll() {
        for (int layer = 0; layer < numLayers; layer++) {
            settle(layer);
        }
    }

    @Override
    public void close() {
        manager.close();
    }
}
