package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.SlotKvCache;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the prefix cache keeps and gives back, over a slot cache whose rows hold made-up keys and
 * values (each position's a function of its token, layer and place), without a model: the longest
 * shared prefix of the same adapter, never a prompt's last token, least recently used prompts
 * leaving under the budget, every prompt kept in the one store made at the first, none freed.
 */
class PrefixCacheTest {

    private static final int LAYERS = 2;
    private static final int HEADS = 2;
    private static final int HEAD_DIM = 3;

    private NDManager manager;
    private SlotKvCache cache;

    @BeforeEach
    void makeCache() {
        manager = NDManager.newBaseManager();
        cache = new SlotKvCache(manager, LAYERS, HEADS, HEAD_DIM, 64, DataType.FLOAT32);
        cache.reserve(2, 64);
    }

    @AfterEach
    void close() {
        cache.close();
        manager.close();
    }

    @Test
    void aPromptGetsTheKeysAndValuesOfItsLongestSharedPrefixButItsLastToken() {
        try (PrefixCache prefixes = new PrefixCache(manager, 100)) {
            long[] kept = {1, 2, 3, 4, 5, 6};
            compute(kept, 0);
            prefixes.store(kept, null, cache, 0);
            assertEquals(4, prefixes.restore(new long[] {1, 2, 3, 4, 9}, null, cache, 1));
            assertEquals(4, cache.length(1));
            assertPositions(new long[] {1, 2, 3, 4}, 1);
            cache.clear(1);
            assertEquals(5, prefixes.restore(kept, null, cache, 1), "the same prompt: all but its last token");
            assertPositions(new long[] {1, 2, 3, 4, 5}, 1);
            cache.clear(1);
            assertEquals(0, prefixes.restore(new long[] {7, 2, 3}, null, cache, 1));
            assertEquals(0, cache.length(1));
            assertEquals(new PrefixCache.Stats(3, 2, 9, 6, 1, 100), prefixes.stats());
        }
    }

    @Test
    void theLongestOfSeveralKeptPrefixesIsChosen() {
        try (PrefixCache prefixes = new PrefixCache(manager, 100)) {
            long[][] kept = {{1, 2, 8, 8}, {1, 2, 3, 4, 5, 8}, {1, 2, 3, 9, 9, 9, 9}};
            for (long[] prompt : kept) {
                compute(prompt, 0);
                prefixes.store(prompt, null, cache, 0);
                cache.clear(0);
            }
            assertEquals(3, prefixes.stats().entries());
            assertEquals(5, prefixes.restore(new long[] {1, 2, 3, 4, 5, 6, 7}, null, cache, 1));
            assertPositions(new long[] {1, 2, 3, 4, 5}, 1);
        }
    }

    @Test
    void theLeastRecentlyUsedPromptsLeaveUnderTheBudget() {
        try (PrefixCache prefixes = new PrefixCache(manager, 36)) { // 3 blocks
            long[] a = filled(13, 1);
            long[] b = filled(13, 2);
            long[] c = filled(13, 3);
            store(prefixes, a);
            store(prefixes, b);
            assertEquals(12, prefixes.restore(a, null, cache, 1), "a is used after b");
            cache.clear(1);
            store(prefixes, c); // 39 positions > 36: b, the least recently used, leaves
            assertEquals(26, prefixes.stats().cachedTokens());
            assertEquals(0, prefixes.restore(b, null, cache, 1));
            assertEquals(12, prefixes.restore(a, null, cache, 1));
            assertPositions(Arrays.copyOf(a, 12), 1);
            cache.clear(1);
            assertEquals(12, prefixes.restore(c, null, cache, 1));
            assertPositions(Arrays.copyOf(c, 12), 1);
            cache.clear(1);
            store(prefixes, new long[37]); // longer than the budget: not kept, nothing leaves
            assertEquals(2, prefixes.stats().entries());
        }
        assertEquals(0, manager.getManagedArrays().size() - bufferArrays(), "closing frees the kept positions");
    }

    /**
     * Prompts of every length that come and go (evicted, replaced) are copied into the store made
     * at the first one and back out of it, blocks scattered over it included: no array is made or
     * freed per prompt, and each kept prompt gives back its own positions.
     */
    @Test
    void keptPromptsComeAndGoWithoutAllocatingArrays() {
        Random random = new Random(3);
        try (PrefixCache prefixes = new PrefixCache(manager, 60)) { // 4 blocks
            store(prefixes, filled(5, 1));
            Set<NDArray> made = Collections.newSetFromMap(new IdentityHashMap<>());
            made.addAll(manager.getManagedArrays());
            for (int i = 0; i < 200; i++) {
                long[] prompt = random.longs(2 + random.nextInt(30), 0, 1000).toArray(); // (place-dependent values)
                store(prefixes, prompt);
                Set<NDArray> now = Collections.newSetFromMap(new IdentityHashMap<>());
                now.addAll(manager.getManagedArrays());
                assertEquals(made, now, "the arrays after prompt " + i);
                assertEquals(prompt.length - 1, prefixes.restore(prompt, null, cache, 1), "prompt " + i);
                assertPositions(Arrays.copyOf(prompt, prompt.length - 1), 1);
                cache.clear(1);
                assertTrue(prefixes.stats().cachedTokens() <= 60);
            }
        }
    }

    @Test
    void aPromptOfAnotherAdapterIsNotShared() {
        try (PrefixCache prefixes = new PrefixCache(manager, 100)) {
            long[] prompt = {1, 2, 3, 4};
            compute(prompt, 0);
            prefixes.store(prompt, "sql", cache, 0);
            assertEquals(0, prefixes.restore(prompt, null, cache, 1));
            assertEquals(0, prefixes.restore(prompt, "chat", cache, 1));
            assertEquals(3, prefixes.restore(prompt, "sql", cache, 1));
            cache.clear(1);
            prefixes.store(prompt, null, cache, 0); // the same tokens for the base weights: kept apart
            assertEquals(2, prefixes.stats().entries());
        }
    }

    @Test
    void aPromptExtendingAKeptOneReplacesItAndOneAKeptPromptStartsWithIsNotKeptTwice() {
        try (PrefixCache prefixes = new PrefixCache(manager, 100)) {
            long[] turn1 = {1, 2, 3};
            long[] turn2 = {1, 2, 3, 4, 5, 6};
            store(prefixes, turn1);
            store(prefixes, turn2);
            assertEquals(1, prefixes.stats().entries());
            assertEquals(6, prefixes.stats().cachedTokens());
            store(prefixes, new long[] {1, 2});
            assertEquals(1, prefixes.stats().entries());
            assertEquals(6, prefixes.stats().cachedTokens());
        }
    }

    @Test
    void aBudgetOfZeroKeepsNothingAndLooksUpNothing() {
        try (PrefixCache prefixes = new PrefixCache(manager, 0)) {
            long[] prompt = {1, 2, 3};
            store(prefixes, prompt);
            assertEquals(0, prefixes.restore(prompt, null, cache, 1));
            assertEquals(new PrefixCache.Stats(0, 0, 0, 0, 0, 0), prefixes.stats());
        }
    }

    /** A prompt of {@code length} tokens, each {@code token} but the last ({@code token + 1}). */
    private static long[] filled(int length, long token) {
        long[] prompt = new long[length];
        Arrays.fill(prompt, token);
        prompt[length - 1] = token + 1;
        return prompt;
    }

    /** Computes {@code prompt} into row 0 and stores it, leaving row 0 empty. */
    private void store(PrefixCache prefixes, long[] prompt) {
        compute(prompt, 0);
        prefixes.store(prompt, null, cache, 0);
        cache.clear(0);
    }

    /** Stands for a prefill: writes each position's made-up keys and values into an empty row. */
    private void compute(long[] tokens, int row) {
        cache.clear(row);
        NDArray[] positions = expected(tokens);
        cache.appendFrom(row, positions, 0, tokens.length);
        for (NDArray array : positions) {
            array.close();
        }
    }

    /** Each layer's keys then values, (H_kv, T, D): key {@code token + 100 layer + 10 head + d}, values negated. */
    private NDArray[] expected(long[] tokens) {
        NDArray[] out = new NDArray[2 * LAYERS];
        for (int layer = 0; layer < LAYERS; layer++) {
            float[] keys = new float[HEADS * tokens.length * HEAD_DIM];
            int i = 0;
            for (int h = 0; h < HEADS; h++) {
                for (long token : tokens) {
                    for (int d = 0; d < HEAD_DIM; d++) {
                        keys[i++] = token + 100 * layer + 10 * h + d;
                    }
                }
            }
            Shape shape = new Shape(HEADS, tokens.length, HEAD_DIM);
            out[2 * layer] = manager.create(keys, shape);
            out[2 * layer + 1] = out[2 * layer].neg();
        }
        return out;
    }

    private void assertPositions(long[] tokens, int row) {
        NDArray[] want = expected(tokens);
        NDArray[] got = cache.newPositionStore(tokens.length, manager);
        cache.copyOut(row, 0, tokens.length, got, 0);
        for (int i = 0; i < want.length; i++) {
            assertArrayEquals(want[i].toFloatArray(), got[i].toFloatArray(), "array " + i);
            want[i].close();
            got[i].close();
        }
    }

    /** The slot cache's buffers: keys and values per layer. */
    private static int bufferArrays() {
        return 2 * LAYERS;
    }
}
