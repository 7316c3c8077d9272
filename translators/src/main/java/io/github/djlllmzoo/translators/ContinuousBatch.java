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
 * ContinuousBatchBuilder#prefillRows}) as many more join beside them, their prompts prefilled into rows of the pool
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

    private final CausalLmBlock model;
    private final SlotPasses passes;
    private final NDManager manager;
    private final SlotKvCache cache;
    private final PrefixCache prefixes;
    private final int maxRows;
    private final long tokenBudget;
    private final int prefillChunk;
    private final PrefillBudget prefillBudget;
    /**
     * The fewest rows a prefill pass takes where passes split exactly (but for a whole prompt that
     * short): the prefix cache's block, and more than the decode kernels' 8 rows, whose last bits
     * differ from the prefill GEMM's.
     */
    private static final int EXACT_PASS_ROWS = PrefixCache.BLOCK_TOKENS;

    /** Whole chunks one prefill pass takes: 1 unless the model's passes split exactly. */
    private final int passChunks;
    private final PoolAdmission admission;
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
    private final RowAdapters rowAdapters = new RowAdapters();
    /** Counted by the driving thread; published after each step and join. */
    private final StepTally tally = new StepTally();
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

    ContinuousBatch(ContinuousBatchBuilder b) {
        CausalLmBlock model = b.model;
        NDManager manager = b.manager;
        int maxRows = b.maxRows;
        int prefillChunk = b.prefillChunk;
        int prefillStepTokens = b.prefillStepTokens;
        long tokenBudget = b.tokenBudget;
        if (maxRows < 1 || b.prefillRows < 0 || b.prefillPassChunks < 1 || tokenBudget < 1 || prefillChunk < 1
                || prefillStepTokens < PREFILL_AS_LONG_AS_DECODE) {
            throw new IllegalArgumentException("maxRows, tokenBudget and prefillChunk must be at least 1,"
                    + " prefillPassChunks at least 1, prefillRows at least 0 and prefillStepTokens at least " + PREFILL_AS_LONG_AS_DECODE + ", got "
                    + maxRows + ", " + tokenBudget + ", " + prefillChunk + ", " + b.prefillRows + ", "
                    + prefillStepTokens);
        }
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
        this.passChunks = prefillChunk >= EXACT_PASS_ROWS
                        && model.kernels().prefillSplitsExactly(model.heldFormats(), EXACT_PASS_ROWS)
                ? b.prefillPassChunks
                : 1;
        this.prefillBudget = new PrefillBudget(prefillStepTokens, model.config().numLayers());
        this.admission = new PoolAdmission(cache, maxRows, b.prefillRows, tokenBudget);
    }

    /**
     * A batch to configure: {@code maxRows} 1, no prefill rows, a budget of one context window,
     * chunks of 64 tokens run whole, no prefix cache.
     *
     * @param model the model block, its parameters loaded
     * @param manager a manager on the model's device; the cache and each step use sub-managers
     * @return the builder
     */
    public static ContinuousBatchBuilder builder(CausalLmBlock model, NDManager manager) {
        return new ContinuousBatchBuilder(model, manager);
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
        return admission.need(promptLength, maxNewTokens);
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
        return admission.canEverHold(count, need);
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
        return admission.canJoin(inUse(), count, need);
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
        int[] pool = admission.poolFor(inUse(), 1, Math.max(need, 1));
        long start = System.nanoTime();
        if (inUse() == 0 && need > cache.capacity()) {
            cache.free(); // made afresh at the larger capacity: nothing to keep
        }
        cache.reserve(pool[0], pool[1]);
        tally.poolSince(start);
        waiting.addLast(new Row(state, need));
        joined = inUse();
        tally.publish();
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
            prefilling.prefilled = exact(prefilling)
                    ? prefixes.restore(prefilling.prompt, null, cache, prefilling.slot, PrefixCache.BLOCK_TOKENS,
                            EXACT_PASS_ROWS)
                    : prefixes.restore(prefilling.prompt, prefilling.state.adapter(), cache, prefilling.slot);
            tally.prefixSince(start);
        }
        if (prefilling != null) {
            prefillChunk();
        }
        takeDecodeRows(); // a prompt prefilled now decodes in this step
        if (decoding > 0) {
            decode();
        }
        if (decoding == 0) {
            rowAdapters.close(); // nothing of the adapters' is kept while no row decodes
            cache.releaseViews(); // nor the decode steps' views of the buffers
        }
        joined = inUse();
        held = heldNow();
        tally.step();
        tally.publish();
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
                tally.poolSince(start);
            }
            ready.remove(next);
            next.slot = decoding;
            rows[decoding++] = next;
        }
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
                int t = passTokens(row);
                passManager = manager.newSubManager();
                NDArray ids = passManager.create(
                        Arrays.copyOfRange(row.prompt, row.prefilled, row.prefilled + t), new Shape(1, t));
                pass = passes.startPrefill(ids, cache, row.slot);
            }
            layers = prefillBudget.run(pass, decoding > 0, start);
            if (!pass.done()) {
                long took = System.nanoTime() - start;
                tally.prefill(0, took);
                timer.prefillLayers(pass.tokens(), layers, took);
                prefillBudget.prefillTook(pass.tokens(), layers, took);
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
        tally.prefill(t, took);
        timer.prefillLayers(t, layers, took);
        prefillBudget.prefillTook(t, layers, took);
        row.prefilled += t;
        if (row.prefilled < row.prompt.length) {
            return;
        }
        prefilling = null;
        start = System.nanoTime();
        prefixes.store(row.prompt, row.state.adapter(), cache, row.slot);
        tally.prefixSince(start);
        start = System.nanoTime();
        boolean ended = row.state.advance(logits);
        tally.sampledSince(start);
        if (ended) {
            cache.clear(row.slot);
            return;
        }
        ready.addLast(row); // takes a decode row once one is free (this step, where one is)
    }

    /** Whether the row's prefill passes split exactly: exact kernels, and no LoRA adapter (the engine's GEMM). */
    private boolean exact(Row row) {
        return passChunks > 1 && row.state.adapter() == null;
    }

    /**
     * The next pass's tokens. Where passes split exactly, up to {@code passChunks} chunks (fewer while
     * sequences decode, so that a layer of the pass fits a step's budget: {@link
     * PrefillBudget#passChunks}), and the
     * rest of the prompt too where fewer than {@link #EXACT_PASS_ROWS} would be left, so that no pass
     * but a whole short prompt's takes fewer rows: every pass then takes the kernels whose rows do
     * not depend on the split, and a prompt reused from the prefix cache at any block boundary
     * (leaving at least that many rows) computes what its cold run computed. Elsewhere one chunk, so
     * that a reused prompt's passes are a cold run's own.
     */
    private int passTokens(Row row) {
        int left = row.prompt.length - row.prefilled;
        if (!exact(row)) {
            return Math.min(prefillChunk, left);
        }
        int t = Math.min(left, prefillBudget.passChunks(passChunks, prefillChunk, decoding > 0) * prefillChunk);
        return left - t < EXACT_PASS_ROWS ? left : t;
    }

    private void decode() {
        int n = decoding;
        long[] next = new long[n];
        for (int r = 0; r < n; r++) {
            next[r] = rows[r].state.lastToken();
        }
        selectRowAdapters(n);
        // every row greedy with nothing else reading its logits: their argmax where they are (the
        // kernels' scan), not copied to Java and scanned row by row there
        boolean argmaxOnly = true;
        for (int r = 0; r < n && argmaxOnly; r++) {
            argmaxOnly = rows[r].state.picksPlainArgmax();
        }
        float[] logits = null;
        long[] picked = null;
        long start = System.nanoTime();
        NDManager step = manager.newSubManager();
        try {
            NDArray ids = step.create(next, new Shape(n, 1));
            NDArray out = passes.decode(ids, cache); // (n, 1, V)
            if (argmaxOnly) {
                picked = model.kernels().argMax(out);
            } else {
                logits = out.toType(DataType.FLOAT32, false).toFloatArray(); // (n * V)
            }
        } finally {
            model.kernels().closeStep(step);
        }
        long took = System.nanoTime() - start;
        prefillBudget.decodePassTook(took);
        tally.decode(n, took);
        timer.decodePass(n, took, prefilledThisStep);
        for (int r = n - 1; r >= 0; r--) {
            start = System.nanoTime();
            boolean ended = picked != null
                    ? rows[r].state.accept(Math.toIntExact(picked[r]), null)
                    : rows[r].state.advance(Arrays.copyOfRange(logits, r * vocab, (r + 1) * vocab));
            tally.sampledSince(start);
            if (ended) {
                leave(r);
            }
        }
    }

    /** Selects each decoding row's adapter for the step ({@link RowAdapters}). */
    private void selectRowAdapters(int n) {
        List<String> names = new ArrayList<>(n);
        for (int r = 0; r < n; r++) {
            names.add(rows[r].state.adapter());
        }
        rowAdapters.select(names);
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
            tally.poolSince(start);
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
        rowAdapters.close();
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
        return tally.counters();
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
        rowAdapters.close();
        prefixes.close();
        cache.close();
    }
}
