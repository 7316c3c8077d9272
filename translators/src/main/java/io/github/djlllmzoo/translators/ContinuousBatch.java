package io.github.djlllmzoo.translators;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.SlotKvCache;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Iteration-level scheduling (continuous batching) over one model: sequences ({@link
 * SequenceState}s) join and leave at any step, each holding a row of the batch's {@link
 * SlotKvCache} at a length of its own. Each {@link #step} takes one chunk of at most {@code
 * prefillChunk} tokens of the oldest joining sequence's prompt, then one decode step of every running
 * sequence, so running sequences keep producing tokens while a long prompt comes in; a sequence
 * leaves as soon as it ends (EOS, stop string, budget, cancelled by its listener) and its row goes to
 * the next. Each sequence computes what it would alone: its own positions, its own keys and values,
 * its own sampler.
 *
 * <p>The cache is a pool under a token budget: its buffers hold (rows, capacity) positions, the
 * capacity the longest reservation ({@code prompt + budget}) of the sequences it held since it was
 * last made, the rows as many of the batch's as the budget allows at that capacity; a sequence joins
 * only if the pool then still holds at most {@code tokenBudget} positions ({@link #canJoin}), so
 * memory is never over-committed. The buffers stay allocated between busy periods (made afresh only
 * when an empty pool is too short for a new sequence). Joined sequences that wait for their prefill
 * keep their rows.
 *
 * <p>Each sequence computes with its own LoRA adapter ({@link SequenceState#adapter()}, {@code null}
 * for the model's own weights): a decode step selects one per row ({@link LoraAdapter#selectRows}),
 * kept while the running rows stay the same, and a prefill chunk its sequence's.
 *
 * <p>With a {@link PrefixCache} (a budget of tokens above 0), a sequence whose prefill starts reuses
 * the keys and values of the longest prompt prefix it shares with a sequence prefilled before it
 * (same adapter), in whole prefill chunks, and prefills only the rest in the chunks a cold run would
 * take, so its output is a cold run's; its prompt is kept in turn once prefilled.
 *
 * <p>One thread drives it (the loop that owns the model); the gauges may be read from others.
 */
public final class ContinuousBatch implements AutoCloseable {

    private final CausalLmBlock model;
    private final NDManager manager;
    private final SlotKvCache cache;
    private final PrefixCache prefixes;
    private final int maxRows;
    private final long tokenBudget;
    private final int prefillChunk;
    private final int vocab;
    /** Rows [0, decoding) are decoding; a prefilling sequence holds {@code prefillRow}. */
    private final Row[] rows;
    private final ArrayDeque<Row> waiting = new ArrayDeque<>();
    private volatile int decoding;
    private Row prefilling;
    private int prefillRow = -1;
    private volatile int joined;
    /** Positions the rows in use hold, as of the last step (a gauge read from other threads). */
    private volatile long held;
    /** The decode step's adapter per row, kept open on the driving thread while the rows stay the same. */
    private LoraAdapter.Selection rowAdapters;
    private List<String> rowAdapterNames = List.of();

    /** One sequence in the batch and how much of its prompt is in the cache. */
    private static final class Row {
        final SequenceState state;
        final long[] prompt;
        final int need;
        int prefilled;

        Row(SequenceState state, int need) {
            this.state = state;
            this.prompt = state.promptIds();
            this.need = need;
        }
    }

    /**
     * @param model the model block, its parameters loaded
     * @param manager a manager on the model's device; the cache and each step use sub-managers
     * @param maxRows the most sequences in the batch at once (≥ 1)
     * @param tokenBudget the most positions the pool may hold (rows × capacity, ≥ 1)
     * @param prefillChunk the most prompt tokens one step prefills (≥ 1)
     */
    public ContinuousBatch(CausalLmBlock model, NDManager manager, int maxRows, long tokenBudget, int prefillChunk) {
        this(model, manager, maxRows, tokenBudget, prefillChunk, 0);
    }

    /**
     * @param model the model block, its parameters loaded
     * @param manager a manager on the model's device; the cache and each step use sub-managers
     * @param maxRows the most sequences in the batch at once (≥ 1)
     * @param tokenBudget the most positions the pool may hold (rows × capacity, ≥ 1)
     * @param prefillChunk the most prompt tokens one step prefills (≥ 1)
     * @param prefixCacheTokens the most prompt positions the {@link PrefixCache} keeps for later
     *     sequences, besides the pool (0: none)
     */
    public ContinuousBatch(
            CausalLmBlock model,
            NDManager manager,
            int maxRows,
            long tokenBudget,
            int prefillChunk,
            long prefixCacheTokens) {
        if (maxRows < 1 || tokenBudget < 1 || prefillChunk < 1) {
            throw new IllegalArgumentException("maxRows, tokenBudget and prefillChunk must be at least 1, got "
                    + maxRows + ", " + tokenBudget + ", " + prefillChunk);
        }
        this.model = model;
        this.manager = manager;
        this.cache = model.newSlotCache(manager);
        this.prefixes = new PrefixCache(manager, prefixCacheTokens, prefillChunk);
        this.maxRows = maxRows;
        this.tokenBudget = tokenBudget;
        this.prefillChunk = prefillChunk;
        this.vocab = model.config().vocabSize();
        this.rows = new Row[maxRows];
    }

    /**
     * The positions a sequence reserves in the pool: its prompt and its budget, within the context
     * window.
     *
     * @param promptLength prompt tokens
     * @param maxNewTokens the most tokens it may generate
     * @return positions to reserve
     */
    public int need(int promptLength, int maxNewTokens) {
        return (int) Math.min((long) promptLength + maxNewTokens, cache.maxCapacity());
    }

    /**
     * Whether {@code count} sequences needing {@code need} positions each could join an empty batch:
     * a request that cannot is refused rather than waiting forever.
     *
     * @param count sequences
     * @param need positions each
     * @return whether they fit the budget and the rows
     */
    public boolean canEverHold(int count, int need) {
        return count <= maxRows && need <= cache.maxCapacity() && (long) count * need <= tokenBudget;
    }

    /**
     * Whether {@code count} sequences needing {@code need} positions each may join now without the
     * pool exceeding its budget or rows.
     *
     * @param count sequences
     * @param need positions each
     * @return whether they fit now
     */
    public boolean canJoin(int count, int need) {
        int[] pool = poolFor(count, need);
        return inUse() + count <= maxRows && (long) pool[0] * pool[1] <= tokenBudget;
    }

    /**
     * The pool's (rows, capacity) once {@code count} sequences of {@code need} positions joined: the
     * buffers as they are where they hold them, else grown to the capacity and to as many of the
     * batch's rows as the budget allows at that capacity (at least the rows in use), so the pool is
     * allocated once per capacity rather than once per joining row. An empty pool too small for
     * them is made afresh, not grown.
     */
    private int[] poolFor(int count, int need) {
        int inUse = inUse();
        boolean fresh = inUse == 0 && need > cache.capacity();
        int rows = fresh ? 0 : cache.rows();
        int capacity = Math.max(need, fresh ? 0 : cache.capacity());
        if (inUse + count > rows || capacity > cache.capacity()) {
            long fit = tokenBudget / Math.max(capacity, 1);
            rows = (int) Math.max(Math.max(rows, inUse + count), Math.min(maxRows, fit));
        }
        return new int[] {rows, capacity};
    }

    /**
     * Adds a sequence; its prompt is prefilled over the next steps, a chunk a step, after those that
     * joined before it.
     *
     * @param state the sequence
     * @return {@code false} where it had already ended (e.g. cancelled) and did not join
     * @throws IllegalArgumentException if its prompt is empty
     * @throws IllegalStateException if it does not fit now ({@link #canJoin})
     */
    public boolean join(SequenceState state) {
        if (state.promptLength() == 0) {
            throw new IllegalArgumentException("a sequence needs at least one prompt token (e.g. BOS)");
        }
        if (state.endIfDue()) {
            return false;
        }
        int need = need(state.promptLength(), state.budget());
        if (!canJoin(1, need)) {
            throw new IllegalStateException("a sequence of " + need + " positions does not fit the pool now");
        }
        int[] pool = poolFor(1, Math.max(need, 1));
        if (inUse() == 0 && need > cache.capacity()) {
            cache.free(); // made afresh at the larger capacity: nothing to keep
        }
        cache.reserve(pool[0], pool[1]);
        waiting.addLast(new Row(state, need));
        joined = inUse();
        return true;
    }

    /**
     * One iteration: drops the sequences that must end before their next token, prefills one chunk
     * of the oldest joining sequence's prompt, then decodes one token of every running sequence.
     * Sequences that end leave at once.
     *
     * @return sequences still in the batch (running or joining)
     */
    public int step() {
        dropEnded();
        if (prefilling == null && !waiting.isEmpty()) {
            prefilling = waiting.pollFirst();
            prefillRow = decoding;
            cache.clear(prefillRow);
            prefilling.prefilled = prefixes.restore(prefilling.prompt, prefilling.state.adapter(), cache, prefillRow);
        }
        if (prefilling != null) {
            prefillChunk();
        }
        if (decoding > 0) {
            decode();
        }
        if (decoding == 0) {
            releaseRowAdapters(); // nothing of the adapters' is kept while no row decodes
        }
        joined = inUse();
        held = heldNow();
        return joined;
    }

    private long heldNow() {
        long sum = 0;
        for (int r = 0; r < decoding; r++) {
            sum += cache.length(r);
        }
        return prefilling == null ? sum : sum + cache.length(prefillRow);
    }

    private void prefillChunk() {
        Row row = prefilling;
        int t = Math.min(prefillChunk, row.prompt.length - row.prefilled);
        float[] logits;
        NDManager step = manager.newSubManager();
        try {
            NDArray ids = step.create(Arrays.copyOfRange(row.prompt, row.prefilled, row.prefilled + t), new Shape(1, t));
            try (LoraAdapter.Selection adapter = LoraAdapter.select(row.state.adapter())) {
                logits = model.prefillSlot(ids, cache, prefillRow).toType(DataType.FLOAT32, false).toFloatArray(); // (V)
            }
        } finally {
            model.kernels().closeStep(step);
        }
        row.prefilled += t;
        if (row.prefilled < row.prompt.length) {
            return;
        }
        prefilling = null;
        prefixes.store(row.prompt, row.state.adapter(), cache, prefillRow);
        if (row.state.advance(logits)) {
            cache.clear(prefillRow);
            return;
        }
        cache.move(prefillRow, decoding); // a no-op where no decoding row left meanwhile
        rows[decoding] = row;
        decoding++;
    }

    private void decode() {
        int n = decoding;
        long[] next = new long[n];
        for (int r = 0; r < n; r++) {
            next[r] = rows[r].state.lastToken();
        }
        selectRowAdapters(n);
        float[] logits;
        NDManager step = manager.newSubManager();
        try {
            NDArray ids = step.create(next, new Shape(n, 1));
            logits = model.decodeSlots(ids, cache).toType(DataType.FLOAT32, false).toFloatArray(); // (n * V)
        } finally {
            model.kernels().closeStep(step);
        }
        for (int r = n - 1; r >= 0; r--) {
            if (rows[r].state.advance(Arrays.copyOfRange(logits, r * vocab, (r + 1) * vocab))) {
                leave(r);
            }
        }
    }

    /**
     * Selects each decoding row's adapter for the step; the selection (and what it derived from the
     * adapters' weights) is kept while the rows' adapters stay the same.
     */
    private void selectRowAdapters(int n) {
        List<String> names = new ArrayList<>(n);
        for (int r = 0; r < n; r++) {
            names.add(rows[r].state.adapter());
        }
        if (rowAdapters != null && names.equals(rowAdapterNames)) {
            return;
        }
        releaseRowAdapters();
        rowAdapters = LoraAdapter.selectRows(names);
        rowAdapterNames = names;
    }

    private void releaseRowAdapters() {
        if (rowAdapters != null) {
            rowAdapters.close();
            rowAdapters = null;
            rowAdapterNames = List.of();
        }
    }

    /** Ends the sequences whose listener cancelled them (or whose budget is spent) before the step. */
    private void dropEnded() {
        for (int r = decoding - 1; r >= 0; r--) {
            if (rows[r].state.endIfDue()) {
                leave(r);
            }
        }
        if (prefilling != null && prefilling.state.endIfDue()) {
            cache.clear(prefillRow);
            prefilling = null;
        }
        waiting.removeIf(row -> row.state.endIfDue());
    }

    /** Frees decoding row {@code r}: the last decoding row takes its place. */
    private void leave(int r) {
        int last = decoding - 1;
        if (r == last) {
            cache.clear(r);
        } else {
            cache.move(last, r);
        }
        rows[r] = rows[last];
        rows[last] = null;
        decoding = last;
        // a prefilling row stays where it is (past the decoding rows); it joins their end once prefilled
    }

    /**
     * Drops every sequence without ending it (after a failed step, whose cause the caller reports
     * to their requests) and frees the cache.
     *
     * @return the sequences dropped
     */
    public List<SequenceState> abandon() {
        List<SequenceState> dropped = new ArrayList<>();
        for (int r = 0; r < decoding; r++) {
            dropped.add(rows[r].state);
            rows[r] = null;
        }
        if (prefilling != null) {
            dropped.add(prefilling.state);
        }
        for (Row row : waiting) {
            dropped.add(row.state);
        }
        waiting.clear();
        prefilling = null;
        decoding = 0;
        joined = 0;
        held = 0;
        releaseRowAdapters();
        cache.free();
        return dropped;
    }

    private int inUse() {
        return decoding + (prefilling == null ? 0 : 1) + waiting.size();
    }

    /** @return sequences in the batch now (decoding, prefilling or waiting for their prefill) */
    public int sequences() {
        return joined;
    }

    /** @return sequences decoding now */
    public int decodingRows() {
        return decoding;
    }

    /** @return positions the pool's buffers hold now (rows × capacity) */
    public long allocatedTokens() {
        return (long) cache.rows() * cache.capacity();
    }

    /**
     * @return positions the rows hold now (their keys and values computed), as of the last step: at
     *     most {@link #allocatedTokens()}, the rest of the buffers being reserved or unused
     */
    public long heldTokens() {
        return held;
    }

    /** @return the most positions the pool may hold */
    public long tokenBudget() {
        return tokenBudget;
    }

    /** @return what the prefix cache has done and holds (all 0 without one) */
    public PrefixCache.Stats prefixCacheStats() {
        return prefixes.stats();
    }

    /** @return bytes one position takes in the pool (keys and values of every layer) */
    public long bytesPerToken() {
        return cache.bytesPerPosition();
    }

    @Override
    public void close() {
        releaseRowAdapters();
        prefixes.close();
        cache.close();
    }
}
