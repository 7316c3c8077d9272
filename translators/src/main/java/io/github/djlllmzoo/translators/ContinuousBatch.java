package io.github.djlllmzoo.translators;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.SlotKvCache;
import io.github.djlllmzoo.blocks.SlotPasses;
import io.github.djlllmzoo.blocks.SlotPrefill;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Iteration-level scheduling (continuous batching) over one model: sequences ({@link
 * SequenceState}s) join and leave at any step, each holding a row of the batch's {@link
 * SlotKvCache} at a length of its own. Each {@link #step} runs prefill work of the oldest joining
 * sequence's prompt, then one decode step of every running sequence, so running sequences keep
 * producing tokens while a long prompt comes in. The prompt is prefilled in chunks of at most {@code
 * prefillChunk} tokens, one forward pass each ({@link SlotPrefill}); a step runs a whole chunk, or
 * while sequences decode only as many of its layers as {@code prefillStepTokens} allows (tokens'
 * worth, or as long as the recent decode passes' median: {@link #PREFILL_AS_LONG_AS_DECODE}), so what a joining
 * prompt adds to a step is bounded without changing where its chunks begin: a chunk computes the same
 * however its layers are spread, and a prefix-cached prompt's whole chunks stay those of a cold run.
 * A sequence leaves as soon as it ends (EOS, stop string, budget, cancelled by its listener) and its
 * row goes to the next. Each sequence computes what it would alone: its own positions, its own keys
 * and values, its own sampler.
 *
 * <p>At most {@code maxRows} sequences decode together; with {@code prefillRows} ({@link
 * Builder#prefillRows}) as many more join beside them, their prompts prefilled into rows of the pool
 * of their own while the decode rows are full. A prefilled sequence (its first token taken) takes a
 * decode row at the step one is free, so a row whose sequence ended decodes again at once instead
 * of staying empty while the next prompt is prefilled (vLLM's scheduler counts running sequences
 * the same way, llama.cpp's server prefills a slot beside those generating).
 *
 * <p>The cache is a pool under a token budget: its buffers hold (rows, capacity) positions, the
 * capacity at least every row's share of the budget ({@code tokenBudget / (maxRows + prefillRows)}, within the
 * context window) and the longest reservation ({@code prompt + budget}) of the sequences it held
 * since it was last made, the rows as many of the batch's as the budget allows at that capacity, so
 * it is allocated once ahead rather than grown (copied) while sequences run; a sequence joins
 * only if the pool then still holds at most {@code tokenBudget} positions ({@link #canJoin}), so
 * memory is never over-committed (the rows of a pool made ahead are {@code maxRows + prefillRows},
 * each a share of the budget). The buffers stay allocated between busy periods (made afresh only
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

    /**
     * The {@code prefillStepTokens} that bounds a step's prefill by time rather than tokens: the
     * chunk's layers run, one after the other, until they took as long as the recent decode passes'
     * median (at least one a step), so a step takes about twice a plain decode step on any machine and model.
     * The layers compute what one pass does however they are spread, so outputs do not depend on it.
     */
    public static final int PREFILL_AS_LONG_AS_DECODE = 0;

    /** Decode passes whose median time bounds a step's prefill under {@link #PREFILL_AS_LONG_AS_DECODE}. */
    private static final int RECENT_DECODE_PASSES = 16;

    private final CausalLmBlock model;
    private final SlotPasses passes;
    private final NDManager manager;
    private final SlotKvCache cache;
    private final PrefixCache prefixes;
    private final int maxRows;
    private final int prefillRows;
    private final long tokenBudget;
    private final int prefillChunk;
    private final int prefillStepTokens;
    /**
     * The recent decode passes' times, whose median is the prefill's budget under {@link
     * #PREFILL_AS_LONG_AS_DECODE}: with the last pass alone, one slow pass (a machine's hiccup)
     * doubled the next step's prefill as well.
     */
    private final long[] recentDecodeNanos = new long[RECENT_DECODE_PASSES];
    private int decodePasses;
    private final int vocab;
    /** Rows [0, decoding) are decoding; a prefilling or prefilled sequence holds a row past them. */
    private final Row[] rows;
    private final ArrayDeque<Row> waiting = new ArrayDeque<>();
    /** Prefilled sequences (their first token taken) waiting for a decode row, oldest first. */
    private final ArrayDeque<Row> ready = new ArrayDeque<>();
    private volatile int decoding;
    private Row prefilling;
    /** The prefilling sequence's chunk whose layers are partly run, on its own manager. */
    private SlotPrefill pass;
    private NDManager passManager;
    private volatile int joined;
    /** Positions the rows in use hold, as of the last step (a gauge read from other threads). */
    private volatile long held;
    /** The decode step's adapter per row, kept open on the driving thread while the rows stay the same. */
    private LoraAdapter.Selection rowAdapters;
    private List<String> rowAdapterNames = List.of();
    /** Counted by the driving thread; {@link #counters} publishes them after each step and join. */
    private long steps;
    private long prefillTokens;
    private long prefillNanos;
    private long decodeTokens;
    private long decodeNanos;
    private long sampleNanos;
    private long poolNanos;
    private long prefixNanos;
    private volatile StepCounters counters = StepCounters.NONE;
    private final PassTimer timer;
    /** Whether this step ran prefill layers (its decode pass comes after them). */
    private boolean prefilledThisStep;

    /** One sequence in the batch and how much of its prompt is in the cache. */
    private static final class Row {
        final SequenceState state;
        final long[] prompt;
        final int need;
        int prefilled;
        /** The cache row it holds once its prefill started (-1 before). */
        int slot = -1;

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
        this(model, manager, maxRows, tokenBudget, prefillChunk, prefillChunk, prefixCacheTokens);
    }

    /**
     * @param model the model block, its parameters loaded
     * @param manager a manager on the model's device; the cache and each step use sub-managers
     * @param maxRows the most sequences in the batch at once (≥ 1)
     * @param tokenBudget the most positions the pool may hold (rows × capacity, ≥ 1)
     * @param prefillChunk the most prompt tokens one prefill pass takes (≥ 1)
     * @param prefillStepTokens the prefill work one step may do while sequences decode, in tokens
     *     through every layer: a chunk of {@code T} tokens runs {@code max(1, layers ×
     *     prefillStepTokens / T)} of its layers a step; {@code prefillChunk} or more runs a whole
     *     chunk a step; {@link #PREFILL_AS_LONG_AS_DECODE} runs layers until the step's prefill took
     *     as long as the recent decode passes' median. A step with no sequence decoding runs a whole chunk
     * @param prefixCacheTokens the most prompt positions the {@link PrefixCache} keeps for later
     *     sequences, besides the pool (0: none)
     */
    public ContinuousBatch(
            CausalLmBlock model,
            NDManager manager,
            int maxRows,
            long tokenBudget,
            int prefillChunk,
            int prefillStepTokens,
            long prefixCacheTokens) {
        this(builder(model, manager).maxRows(maxRows).tokenBudget(tokenBudget).prefillChunk(prefillChunk)
                .prefillStepTokens(prefillStepTokens).prefixCacheTokens(prefixCacheTokens));
    }

    private ContinuousBatch(Builder b) {
        CausalLmBlock model = b.model;
        NDManager manager = b.manager;
        int maxRows = b.maxRows;
        int prefillChunk = b.prefillChunk;
        int prefillStepTokens = b.prefillStepTokens;
        long tokenBudget = b.tokenBudget;
        if (maxRows < 1 || b.prefillRows < 0 || tokenBudget < 1 || prefillChunk < 1
                || prefillStepTokens < PREFILL_AS_LONG_AS_DECODE) {
            throw new IllegalArgumentException("maxRows, tokenBudget and prefillChunk must be at least 1,"
                    + " prefillRows at least 0 and prefillStepTokens at least " + PREFILL_AS_LONG_AS_DECODE + ", got "
                    + maxRows + ", " + tokenBudget + ", " + prefillChunk + ", " + b.prefillRows + ", "
                    + prefillStepTokens);
        }
        this.prefillRows = b.prefillRows;
        this.prefillStepTokens = prefillStepTokens;
        this.model = model;
        this.manager = manager;
        this.passes = new SlotPasses(model);
        this.cache = passes.newCache(manager);
        this.prefixes = new PrefixCache(manager, b.prefixCacheTokens, prefillChunk);
        this.maxRows = maxRows;
        this.tokenBudget = tokenBudget;
        this.prefillChunk = prefillChunk;
        this.vocab = model.config().vocabSize();
        this.rows = new Row[maxRows];
        this.timer = b.timer;
    }

    /**
     * A batch to configure: {@code maxRows} 1, no prefill rows, a budget of one context window,
     * chunks of 64 tokens run whole, no prefix cache.
     *
     * @param model the model block, its parameters loaded
     * @param manager a manager on the model's device; the cache and each step use sub-managers
     * @return the builder
     */
    public static Builder builder(CausalLmBlock model, NDManager manager) {
        return new Builder(model, manager);
    }

    /** How a {@link ContinuousBatch} is made; each setter says what it bounds. */
    public static final class Builder {
        private final CausalLmBlock model;
        private final NDManager manager;
        private int maxRows = 1;
        private int prefillRows;
        private long tokenBudget;
        private int prefillChunk = 64;
        private int prefillStepTokens = -1;
        private long prefixCacheTokens;
        private PassTimer timer = PassTimer.NONE;

        private Builder(CausalLmBlock model, NDManager manager) {
            this.model = model;
            this.manager = manager;
            this.tokenBudget = model.config().maxPositions();
        }

        /**
         * @param rows the most sequences decoding together (≥ 1)
         * @return this builder
         */
        public Builder maxRows(int rows) {
            this.maxRows = rows;
            return this;
        }

        /**
         * Rows of the pool beside the decode rows where prompts are prefilled ahead: a sequence joins
         * while the batch holds fewer than {@code maxRows + rows} sequences, is prefilled into a row of
         * its own and takes a decode row as soon as one is free, so a row whose sequence ended
         * decodes again at the next step rather than after the next prompt's prefill.
         *
         * @param rows the most sequences beside the decoding ones (≥ 0; 0: a prompt's prefill
         *     starts only once it has a decode row)
         * @return this builder
         */
        public Builder prefillRows(int rows) {
            this.prefillRows = rows;
            return this;
        }

        /**
         * @param tokens the most positions the pool may hold (rows × capacity, ≥ 1)
         * @return this builder
         */
        public Builder tokenBudget(long tokens) {
            this.tokenBudget = tokens;
            return this;
        }

        /**
         * @param tokens the most prompt tokens one prefill pass takes (≥ 1)
         * @return this builder
         */
        public Builder prefillChunk(int tokens) {
            this.prefillChunk = tokens;
            return this;
        }

        /**
         * @param tokens the prefill work one step may do while sequences decode, as the constructor
         *     of the same parameter says (default: whole chunks)
         * @return this builder
         */
        public Builder prefillStepTokens(int tokens) {
            this.prefillStepTokens = tokens;
            return this;
        }

        /**
         * @param tokens the most prompt positions the {@link PrefixCache} keeps (0: none)
         * @return this builder
         */
        public Builder prefixCacheTokens(long tokens) {
            this.prefixCacheTokens = tokens;
            return this;
        }

        /**
         * @param timer told each forward pass's time as it ends (default: none)
         * @return this builder
         */
        public Builder passTimer(PassTimer timer) {
            this.timer = Objects.requireNonNull(timer, "timer");
            return this;
        }

        /** @return the batch */
        public ContinuousBatch build() {
            if (prefillStepTokens == -1) {
                prefillStepTokens = prefillChunk;
            }
            return new ContinuousBatch(this);
        }
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
        return inUse() + count <= maxRows + prefillRows && (long) pool[0] * pool[1] <= tokenBudget;
    }

    /**
     * The pool's (rows, capacity) once {@code count} sequences of {@code need} positions joined: the
     * buffers as they are where they hold them, else made at least at every row's share of the
     * budget ({@link #rowShare}) and with as many of the batch's rows as the budget allows at that
     * capacity (at least the rows in use). The pool is so allocated ahead, once, rather than grown
     * while sequences run: growing copies every buffer, a step's stall of 100 ms and more on
     * Llama-110M (docs/PERFORMANCE.md), and only a sequence longer than a row's share grows it. An
     * empty pool too small for them is made afresh, not grown.
     */
    private int[] poolFor(int count, int need) {
        int inUse = inUse();
        boolean fresh = inUse == 0 && need > cache.capacity();
        int rows = fresh ? 0 : cache.rows();
        int capacity = Math.max(need, fresh ? rowShare() : cache.capacity());
        if (inUse + count > rows || capacity > cache.capacity()) {
            long fit = tokenBudget / Math.max(capacity, 1);
            rows = (int) Math.max(Math.max(rows, inUse + count), Math.min(maxRows + prefillRows, fit));
        }
        return new int[] {rows, capacity};
    }

    /** Positions per row where every one of the batch's rows takes an equal share of the budget. */
    private int rowShare() {
        return (int) Math.min(cache.maxCapacity(), tokenBudget / (maxRows + prefillRows));
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
        long start = System.nanoTime();
        if (inUse() == 0 && need > cache.capacity()) {
            cache.free(); // made afresh at the larger capacity: nothing to keep
        }
        cache.reserve(pool[0], pool[1]);
        poolNanos += System.nanoTime() - start;
        waiting.addLast(new Row(state, need));
        joined = inUse();
        publishCounters();
        return true;
    }

    /**
     * One iteration: drops the sequences that must end before their next token, gives free decode
     * rows to prefilled sequences, prefills one chunk of the oldest joining sequence's prompt, then
     * decodes one token of every running sequence (one prefilled in this step included, where a row
     * is free). Sequences that end leave at once.
     *
     * @return sequences still in the batch (running or joining)
     */
    public int step() {
        dropEnded();
        takeDecodeRows();
        prefilledThisStep = false;
        if (prefilling == null && !waiting.isEmpty()) {
            prefilling = waiting.pollFirst();
            prefilling.slot = freeRow();
            cache.clear(prefilling.slot);
            long start = System.nanoTime();
            prefilling.prefilled =
                    prefixes.restore(prefilling.prompt, prefilling.state.adapter(), cache, prefilling.slot);
            prefixNanos += System.nanoTime() - start;
        }
        if (prefilling != null) {
            prefillChunk();
        }
        takeDecodeRows(); // a prompt prefilled now decodes in this step
        if (decoding > 0) {
            decode();
        }
        if (decoding == 0) {
            releaseRowAdapters(); // nothing of the adapters' is kept while no row decodes
            cache.releaseViews(); // nor the decode steps' views of the buffers
        }
        joined = inUse();
        held = heldNow();
        steps++;
        publishCounters();
        return joined;
    }

    private long heldNow() {
        long sum = 0;
        for (int r = 0; r < decoding; r++) {
            sum += cache.length(r);
        }
        for (Row row : ready) {
            sum += cache.length(row.slot);
        }
        return prefilling == null ? sum : sum + cache.length(prefilling.slot);
    }

    /**
     * The lowest row past the decoding ones that no prefilled sequence holds, for a prompt whose
     * prefill starts: where no sequence waits for a decode row, the row it will decode in.
     */
    private int freeRow() {
        for (int r = decoding; r < cache.rows(); r++) {
            if (heldByReady(r) == null) {
                return r;
            }
        }
        throw new IllegalStateException("no free row among " + cache.rows() + " for " + inUse() + " sequences");
    }

    private Row heldByReady(int slot) {
        for (Row row : ready) {
            if (row.slot == slot) {
                return row;
            }
        }
        return null;
    }

    /**
     * Gives free decode rows to prefilled sequences, oldest first; one already in the row decodes
     * there without a copy. A row the prefilling sequence's pass writes into is left to it until its
     * prompt is in (its first token then taken, it decodes there).
     */
    private void takeDecodeRows() {
        while (decoding < maxRows && !ready.isEmpty()) {
            Row next = heldByReady(decoding);
            if (next == null) {
                if (prefilling != null && prefilling.slot == decoding) {
                    return;
                }
                next = ready.peekFirst();
                long start = System.nanoTime();
                cache.move(next.slot, decoding);
                poolNanos += System.nanoTime() - start;
            }
            ready.remove(next);
            next.slot = decoding;
            rows[decoding++] = next;
        }
    }

    /**
     * Runs the pass's layers this step may: all of them where no sequence decodes, else its budget.
     *
     * @return the layers run
     */
    private int runLayers(long start) {
        int before = pass.remainingLayers();
        if (decoding == 0) {
            pass.run(pass.remainingLayers()); // no running row to keep waiting
        } else if (prefillStepTokens == PREFILL_AS_LONG_AS_DECODE) {
            long budget = decodePassMedian();
            do {
                pass.run(1);
            } while (!pass.done() && System.nanoTime() - start < budget);
        } else {
            int layers = model.config().numLayers();
            pass.run((int) Math.max(1, Math.min(layers, (long) layers * prefillStepTokens / pass.tokens())));
        }
        return before - pass.remainingLayers();
    }

    /** The median of the recent decode passes' times (0 before the first: one layer runs then). */
    private long decodePassMedian() {
        int n = Math.min(decodePasses, RECENT_DECODE_PASSES);
        if (n == 0) {
            return 0;
        }
        long[] sorted = Arrays.copyOf(recentDecodeNanos, n);
        Arrays.sort(sorted);
        return sorted[n / 2];
    }

    private void publishCounters() {
        counters = new StepCounters(
                steps, prefillTokens, prefillNanos, decodeTokens, decodeNanos, sampleNanos, poolNanos, prefixNanos);
    }

    /**
     * Runs the prefilling sequence's next layers: a chunk's pass starts when the previous ended and
     * runs as many layers a step as {@code prefillStepTokens} allows; once its last layer ran, the
     * chunk counts as prefilled.
     */
    private void prefillChunk() {
        Row row = prefilling;
        float[] logits;
        long start = System.nanoTime();
        int layers;
        prefilledThisStep = true;
        try (LoraAdapter.Selection adapter = LoraAdapter.select(row.state.adapter())) {
            if (pass == null) {
                int t = Math.min(prefillChunk, row.prompt.length - row.prefilled);
                passManager = manager.newSubManager();
                NDArray ids = passManager.create(
                        Arrays.copyOfRange(row.prompt, row.prefilled, row.prefilled + t), new Shape(1, t));
                pass = passes.startPrefill(ids, cache, row.slot);
            }
            layers = runLayers(start);
            if (!pass.done()) {
                long took = System.nanoTime() - start;
                prefillNanos += took;
                timer.prefillLayers(pass.tokens(), layers, took);
                return;
            }
            logits = pass.logits().toType(DataType.FLOAT32, false).toFloatArray(); // (V)
        } catch (RuntimeException e) {
            dropPass();
            throw e;
        }
        int t = pass.tokens();
        dropPass();
        long took = System.nanoTime() - start;
        prefillNanos += took;
        timer.prefillLayers(t, layers, took);
        prefillTokens += t;
        row.prefilled += t;
        if (row.prefilled < row.prompt.length) {
            return;
        }
        prefilling = null;
        start = System.nanoTime();
        prefixes.store(row.prompt, row.state.adapter(), cache, row.slot);
        prefixNanos += System.nanoTime() - start;
        start = System.nanoTime();
        boolean ended = row.state.advance(logits);
        sampleNanos += System.nanoTime() - start;
        if (ended) {
            cache.clear(row.slot);
            return;
        }
        ready.addLast(row); // takes a decode row once one is free (this step, where one is)
    }

    private void decode() {
        int n = decoding;
        long[] next = new long[n];
        for (int r = 0; r < n; r++) {
            next[r] = rows[r].state.lastToken();
        }
        selectRowAdapters(n);
        float[] logits;
        long start = System.nanoTime();
        NDManager step = manager.newSubManager();
        try {
            NDArray ids = step.create(next, new Shape(n, 1));
            logits = passes.decode(ids, cache).toType(DataType.FLOAT32, false).toFloatArray(); // (n * V)
        } finally {
            model.kernels().closeStep(step);
        }
        long took = System.nanoTime() - start;
        recentDecodeNanos[decodePasses++ % RECENT_DECODE_PASSES] = took;
        decodeNanos += took;
        decodeTokens += n;
        timer.decodePass(n, took, prefilledThisStep);
        for (int r = n - 1; r >= 0; r--) {
            start = System.nanoTime();
            boolean ended = rows[r].state.advance(Arrays.copyOfRange(logits, r * vocab, (r + 1) * vocab));
            sampleNanos += System.nanoTime() - start;
            if (ended) {
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
            dropPass();
            cache.clear(prefilling.slot);
            prefilling = null;
        }
        ready.removeIf(row -> {
            boolean ended = row.state.endIfDue();
            if (ended) {
                cache.clear(row.slot);
            }
            return ended;
        });
        waiting.removeIf(row -> row.state.endIfDue());
    }

    /** Frees the arrays of a chunk's pass (its positions were counted, or never will be). */
    private void dropPass() {
        if (passManager != null) {
            model.kernels().closeStep(passManager);
        }
        pass = null;
        passManager = null;
    }

    /** Frees decoding row {@code r}: the last decoding row takes its place. */
    private void leave(int r) {
        int last = decoding - 1;
        if (r == last) {
            cache.clear(r);
        } else {
            long start = System.nanoTime();
            cache.move(last, r);
            poolNanos += System.nanoTime() - start;
        }
        rows[r] = rows[last];
        rows[last] = null;
        decoding = last;
        // prefilling and prefilled rows stay where they are (past the decoding rows) until they take a decode row
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
        for (Row row : ready) {
            dropped.add(row.state);
        }
        ready.clear();
        for (Row row : waiting) {
            dropped.add(row.state);
        }
        waiting.clear();
        dropPass();
        prefilling = null;
        decoding = 0;
        joined = 0;
        held = 0;
        releaseRowAdapters();
        cache.free();
        return dropped;
    }

    private int inUse() {
        return decoding + (prefilling == null ? 0 : 1) + ready.size() + waiting.size();
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

    /**
     * Where the steps spent their time so far; readable from any thread (published after each step
     * and join).
     *
     * @return the counters, summed since the batch was made
     */
    public StepCounters counters() {
        return counters;
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
        dropPass();
        releaseRowAdapters();
        prefixes.close();
        cache.close();
    }
}
