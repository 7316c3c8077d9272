package io.github.djlllmzoo.translators;

import io.github.djlllmzoo.blocks.SlotKvCache;

/**
 * What the KV pool of a {@link ContinuousBatch} may hold: the positions a sequence reserves, whether
 * sequences fit now or ever, and the pool's shape once they joined. The pool is allocated ahead,
 * once, rather than grown while sequences run.
 */
final class PoolAdmission {

    private final SlotKvCache cache;
    private final int maxRows;
    private final int prefillRows;
    private final long tokenBudget;

    /**
     * @param cache the pool
     * @param maxRows the most sequences decoding together
     * @param prefillRows rows beside them where prompts are prefilled ahead
     * @param tokenBudget the most positions the pool may hold
     */
    PoolAdmission(SlotKvCache cache, int maxRows, int prefillRows, long tokenBudget) {
        this.cache = cache;
        this.maxRows = maxRows;
        this.prefillRows = prefillRows;
        this.tokenBudget = tokenBudget;
    }

    /** Positions a sequence reserves: its prompt and its budget, within the context window. */
    int need(int promptLength, int maxNewTokens) {
        return (int) Math.min((long) promptLength + maxNewTokens, cache.maxCapacity());
    }

    /** Whether {@code count} sequences of {@code need} positions each could join an empty batch. */
    boolean canEverHold(int count, int need) {
        return count <= maxRows && need <= cache.maxCapacity() && (long) count * need <= tokenBudget;
    }

    /**
     * Whether {@code count} sequences of {@code need} positions each may join {@code inUse} now
     * without the pool exceeding its budget or rows.
     */
    boolean canJoin(int inUse, int count, int need) {
        int[] pool = poolFor(inUse, count, need);
        return inUse + count <= maxRows + prefillRows && (long) pool[0] * pool[1] <= tokenBudget;
    }

    /**
     * The pool's (rows, capacity) once {@code count} sequences of {@code need} positions joined
     * {@code inUse}: the buffers as they are where they hold them, else made at least at every row's
     * share of the budget ({@link #rowShare}) and with as many of the batch's rows as the budget
     * allows at that capacity (at least the rows in use). Allocated ahead, once: growing copies every
     * buffer, a step's stall of 100 ms and more on Llama-110M (docs/PERFORMANCE.md), and only a
     * sequence longer than a row's share grows it. An empty pool too small for them is made afresh,
     * not grown.
     */
    int[] poolFor(int inUse, int count, int need) {
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
}
