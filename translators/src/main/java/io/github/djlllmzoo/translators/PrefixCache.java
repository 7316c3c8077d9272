package io.github.djlllmzoo.translators;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.SlotKvCache;
import java.util.ArrayList;
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
 * <p>Kept prompts are whole entries, found by comparing token ids (a scan, which costs nothing beside
 * a forward pass over the entries a budget holds). A prompt that extends a kept one replaces it (it
 * serves every lookup the shorter one served), and one that a kept one already starts with is not
 * kept twice, so a conversation's turns hold one entry. The entries' positions count against a
 * budget of tokens; the least recently used (stored or restored) leave first. A budget of 0 keeps
 * nothing.
 *
 * <p>One thread (the decode loop) stores and restores; {@link #stats} may be read from others.
 */
public final class PrefixCache implements AutoCloseable {

    /** One kept prompt: its tokens, its adapter, and each layer's keys then values, (H_kv, T, D). */
    private static final class Entry {
        final long[] tokens;
        final String adapter;
        final NDArray[] positions;

        Entry(long[] tokens, String adapter, NDArray[] positions) {
            this.tokens = tokens;
            this.adapter = adapter;
            this.positions = positions;
        }

        void close() {
            for (NDArray array : positions) {
                array.close();
            }
        }
    }

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
        int reused = Math.min(longest, prompt.length - 1) / granularity * granularity;
        if (reused < 1) {
            return 0;
        }
        cache.writePrefix(row, best.positions, reused);
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
        while (cachedTokens + prompt.length > budget) {
            remove(entries.get(0));
        }
        entries.add(new Entry(prompt.clone(), adapter, cache.copyPositions(row, prompt.length, manager)));
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
        entry.close();
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
        cachedTokens = 0;
        entryCount = 0;
        manager.close();
    }
}
