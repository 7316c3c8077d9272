package io.github.djlllmzoo.translators;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.SlotKvCache;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Objects;

/**
 * The keys and values of prompts already computed, kept for later sequences that start with the same
 * tokens (automatic prefix caching: a system prompt, a chat's history, few-shot examples). Once a
 * sequence's prompt is in its {@link SlotKvCache} row, {@link #store} copies the row's positions out,
 * keyed by the prompt's token ids and the sequence's LoRA adapter; a joining sequence's {@link
 * #restore} writes the longest prefix it shares with a kept prompt of the same adapter into its row,
 * so only the rest of its prompt is computed. At least its last prompt token is always left to
 * compute, which gives the logits of its first token. A position's keys and values depend only on
 * the tokens up to it (and the adapter), so what follows is what a cold run computes.
 *
 * <p>The kept positions live in one store made at the first {@link #store} ({@link
 * SlotKvCache#newPositionStore}), in blocks of {@link #BLOCK_TOKENS} positions, the budget's worth
 * rounded up to whole blocks; an entry holds the blocks its prompt fills, in order, and gives them
 * back when it leaves. Prompts so come and go without allocating: when each kept prompt had arrays
 * of its own, made and freed in another order than made and of every prompt's size, the allocator's
 * heap kept the holes they left and the server's resident memory grew with the requests it served
 * (docs/serving-production.md, memory over thousands of requests).
 *
 * <p>Kept prompts are whole entries, found by comparing token ids (a scan, which costs nothing beside
 * a forward pass over the entries a budget holds). A prompt that extends a kept one replaces it (it
 * serves every lookup the shorter one served), and one that a kept one already starts with is not
 * kept twice, so a conversation's turns hold one entry. The entries' positions count against a
 * budget of tokens (and their blocks against the store's); the least recently used (stored or
 * restored) leave first. A budget of 0 keeps nothing. The store takes the budget's memory from the
 * first prompt kept on, as the KV pool takes its own from the first sequence.
 *
 * <p>One thread (the decode loop) stores and restores; {@link #stats} may be read from others.
 */
public final class PrefixCache implements AutoCloseable {

    /**
     * Positions of a block of the store: vLLM's default block size, so that an entry's last block
     * leaves at most 15 positions unused while a prompt of hundreds of tokens takes few copies.
     */
    public static final int BLOCK_TOKENS = 16;

    /** One kept prompt: its tokens, its adapter, and the store's blocks that hold its positions, in order. */
    private record Entry(long[] tokens, String adapter, int[] blocks) {}

    /**
     * What the cache has done and holds.
     *
     * @param lookups sequences that looked for a prefix
     * @param hits sequences that reused at least one position
     * @param reusedTokens prompt positions restored rather than computed, over all hits
     * @param cachedTokens positions kept now
     * @param entries prompts kept now
     * @param budgetTokens the most positions it keeps
     */
    public record Stats(long lookups, long hits, long reusedTokens, long cachedTokens, int entries, long budgetTokens) {}

    private final NDManager manager;
    private final long budget;
    private final int granularity;
    /** Each layer's keys then values, (H_kv, blocks x {@link #BLOCK_TOKENS}, D); made at the first store. */
    private NDArray[] store;
    private final int storeBlocks;
    /** The store's blocks no entry holds. */
    private final BitSet freeBlocks = new BitSet();
    /** Least recently used first. */
    private final List<Entry> entries = new ArrayList<>();
    private volatile long lookups;
    private volatile long hits;
    private volatile long reusedTokens;
    private volatile long cachedTokens;
    private volatile int entryCount;

    /**
     * A cache that reuses any number of shared positions.
     *
     * @param parent the manager whose device holds the kept positions; the cache makes a sub-manager
     * @param budgetTokens the most positions kept over all entries (0: none)
     */
    public PrefixCache(NDManager parent, long budgetTokens) {
        this(parent, budgetTokens, 1);
    }

    /**
     * A cache that reuses shared positions in whole multiples of {@code granularity}: with the prefill
     * chunk there, what is left of a prompt is prefilled in the chunks a cold run takes, so every
     * position is computed by the same kernels over the same rows as cold and the output is the same
     * bit for bit (a compressed format's kernels round differently for passes of different row counts).
     *
     * @param parent the manager whose device holds the kept positions; the cache makes a sub-manager
     * @param budgetTokens the most positions kept over all entries (0: none)
     * @param granularity the reuse is a multiple of it (at least 1)
     */
    public PrefixCache(NDManager parent, long budgetTokens, int granularity) {
        if (budgetTokens < 0) {
            throw new IllegalArgumentException("a prefix cache's budget must be >= 0 tokens, got " + budgetTokens);
        }
        if (granularity < 1) {
            throw new IllegalArgumentException("a prefix cache's granularity must be >= 1 token, got " + granularity);
        }
        this.manager = parent.newSubManager();
        this.budget = budgetTokens;
        this.granularity = granularity;
        this.storeBlocks = (int) Math.min(Integer.MAX_VALUE, (budgetTokens + BLOCK_TOKENS - 1) / BLOCK_TOKENS);
        freeBlocks.set(0, storeBlocks);
    }

    /**
     * Writes the longest kept prefix of {@code prompt} (of the same adapter) into an empty row.
     *
     * @param prompt the sequence's prompt
     * @param adapter its LoRA adapter, or {@code null} for the model's own weights
     * @param cache the slot cache
     * @param row the sequence's row, holding nothing
     * @return the positions written (the row's length now), at most {@code prompt.length - 1} and a
     *     multiple of the granularity; 0 where nothing is shared
     */
    public int restore(long[] prompt, String adapter, SlotKvCache cache, int row) {
        return restore(prompt, adapter, cache, row, granularity, 1);
    }

    /**
     * {@link #restore(long[], String, SlotKvCache, int)} with a granularity and the positions left to
     * compute of this sequence's own: where prefill passes split exactly, any block boundary may be
     * reused so long as the pass left is as wide as a cold run's passes.
     *
     * @param prompt the sequence's prompt
     * @param adapter its LoRA adapter, or {@code null} for the model's own weights
     * @param cache the slot cache
     * @param row the sequence's row, holding nothing
     * @param granularity the reuse is a multiple of it (at least 1)
     * @param leave the fewest prompt positions left to compute (at least 1)
     * @return the positions written, at most {@code prompt.length - leave} and a multiple of {@code
     *     granularity}; 0 where nothing is shared
     */
    public int restore(long[] prompt, String adapter, SlotKvCache cache, int row, int granularity, int leave) {
        if (granularity < 1 || leave < 1) {
            throw new IllegalArgumentException("granularity and leave must be >= 1, got " + granularity + ", " + leave);
        }
        if (budget == 0) {
            return 0;
        }
        lookups++;
        Entry best = null;
        int longest = 0;
        for (Entry entry : entries) { // a later entry is a more recently used one: it wins a tie
            if (!Objects.equals(entry.adapter, adapter)) {
                continue; // its positions were computed with other weights
            }
            int common = commonPrefix(entry.tokens, prompt);
            if (common > 0 && common >= longest) {
                best = entry;
                longest = common;
            }
        }
        int reused = Math.min(longest, prompt.length - leave) / granularity * granularity;
        if (reused < 1) {
            return 0;
        }
        if (cache.length(row) != 0) {
            throw new IllegalArgumentException(
                    "row " + row + " holds " + cache.length(row) + " positions; restore needs an empty one");
        }
        forEachRun(best, reused, (at, from, length) -> cache.appendFrom(row, store, at, length));
        touch(best);
        hits++;
        reusedTokens += reused;
        return reused;
    }

    /**
     * Keeps the prompt a row holds now, unless a kept one of the same adapter already starts with it;
     * kept prompts it extends leave, then the least recently used until it fits. A prompt longer than
     * the budget is not kept.
     *
     * @param prompt the sequence's prompt, whose positions are all in its row
     * @param adapter its LoRA adapter, or {@code null}
     * @param cache the slot cache
     * @param row the sequence's row
     */
    public void store(long[] prompt, String adapter, SlotKvCache cache, int row) {
        if (prompt.length > budget) {
            return;
        }
        List<Entry> extended = new ArrayList<>();
        for (Entry entry : entries) {
            if (!Objects.equals(entry.adapter, adapter)) {
                continue;
            }
            int common = commonPrefix(entry.tokens, prompt);
            if (common == prompt.length) {
                touch(entry);
                return;
            }
            if (common == entry.tokens.length) {
                extended.add(entry);
            }
        }
        for (Entry entry : extended) {
            remove(entry);
        }
        int need = blocksFor(prompt.length);
        while (cachedTokens + prompt.length > budget || freeBlocks.cardinality() < need) {
            remove(entries.get(0));
        }
        if (store == null) {
            store = cache.newPositionStore(storeBlocks * BLOCK_TOKENS, manager);
        }
        int[] blocks = new int[need];
        for (int i = 0, b = -1; i < need; i++) {
            b = freeBlocks.nextSetBit(b + 1); // the lowest free ones: an entry's blocks tend to be one run
            blocks[i] = b;
        }
        Entry entry = new Entry(prompt.clone(), adapter, blocks);
        forEachRun(entry, prompt.length, (at, from, length) -> cache.copyOut(row, from, length, store, at));
        for (int b : blocks) {
            freeBlocks.clear(b);
        }
        entries.add(entry);
        cachedTokens += prompt.length;
        entryCount = entries.size();
    }

    /** @return what the cache has done and holds */
    public Stats stats() {
        return new Stats(lookups, hits, reusedTokens, cachedTokens, entryCount, budget);
    }

    private void touch(Entry entry) {
        entries.remove(entry);
        entries.add(entry);
    }

    private void remove(Entry entry) {
        entries.remove(entry);
        cachedTokens -= entry.tokens.length;
        entryCount = entries.size();
        for (int b : entry.blocks) {
            freeBlocks.set(b);
        }
    }

    private static int blocksFor(int tokens) {
        return (tokens + BLOCK_TOKENS - 1) / BLOCK_TOKENS;
    }

    /** A run of an entry's positions that lies in consecutive positions of the store. */
    private interface Run {
        void copy(int storeAt, int promptFrom, int length);
    }

    /** Calls {@code run} for the entry's first {@code length} positions, a run of consecutive blocks at a time. */
    private static void forEachRun(Entry entry, int length, Run run) {
        int[] blocks = entry.blocks;
        int from = 0;
        for (int i = 0; i < blocks.length && from < length; ) {
            int first = i;
            while (i + 1 < blocks.length && blocks[i + 1] == blocks[i] + 1) {
                i++;
            }
            i++;
            int positions = Math.min((i - first) * BLOCK_TOKENS, length - from);
            run.copy(blocks[first] * BLOCK_TOKENS, from, positions);
            from += positions;
        }
    }

    private static int commonPrefix(long[] a, long[] b) {
        int n = Math.min(a.length, b.length);
        int i = 0;
        while (i < n && a[i] == b[i]) {
            i++;
        }
        return i;
    }

    /** Frees every kept prompt. */
    @Override
    public void close() {
        entries.clear();
        freeBlocks.set(0, storeBlocks);
        store = null;
        cachedTokens = 0;
        entryCount = 0;
        manager.close();
    }
}
