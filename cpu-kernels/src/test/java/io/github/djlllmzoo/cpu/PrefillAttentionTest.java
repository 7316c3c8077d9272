package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.AttentionMask;
import io.github.djlllmzoo.blocks.AttentionScores;
import io.github.djlllmzoo.blocks.KeyValues;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.ScaledDotProductAttention;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PrefillAttentionTest extends ManagedArraysTest {

    private final CpuKernels kernels = new CpuKernels(true, true);

    @BeforeEach
    void kernelBuiltAndLoadedWhereTheCpuHasAvx512() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    private void assertKernelEqualsEngine(NDArray q, KeyValues kv, NDArray mask, AttentionScores scores) {
        assertTrue(PrefillAttention.applies(q, kv, mask));
        NDArray kernel = PrefillAttention.attend(q, kv, mask, scores);
        NDArray engine = ScaledDotProductAttention.attend(q, kv.keys(), kv.values(), mask, scores, 0, false);
        assertEquals(q.getShape(), kernel.getShape());
        assertArrayEquals(engine.toFloatArray(), kernel.toFloatArray(),
                RoundingBound.ofAttention(q, kv.keys(), kv.values(), scores));
    }

    /** Random (B, H_kv, S, D) keys or values. */
    private NDArray random(long b, long kvHeads, long s, long d) {
        return manager.randomNormal(new Shape(b, kvHeads, s, d));
    }

    /**
     * Causal prefills after {@code past} cached positions, the keys in a cache's buffers (past
     * positions' rows written first): from two positions to more than a block of rows, head widths
     * that are not a multiple of 16, grouped and multi-query heads.
     */
    @ParameterizedTest(name = "B={0} H={1} H_kv={2} D={3} T={4} past={5}")
    @CsvSource({
        "1, 12, 4, 64, 128, 0", // Llama-110M's prefill
        "1, 12, 12, 64, 2, 0", // two positions
        "1, 12, 12, 64, 37, 5", // a block's tail of rows, after cached positions
        "3, 4, 4, 128, 20, 0", // 128-wide heads
        "2, 6, 3, 24, 33, 0", // a head width not a multiple of 16
        "2, 2, 1, 80, 17, 40", // multi-query, 80-wide heads (two value chunks), a long past
        "1, 2, 2, 256, 9, 0", // the widest head
    })
    void causalPrefillOverTheCacheEqualsTheEngine(long b, long heads, long kvHeads, long d, int t, int past) {
        try (KvCache cache = new KvCache(manager, new int[1], (int) b, (int) kvHeads, (int) d, past + t + 7, 4096,
                DataType.FLOAT32)) {
            if (past > 0) {
                cache.update(0, random(b, kvHeads, past, d), random(b, kvHeads, past, d));
            }
            KeyValues kv = cache.update(0, random(b, kvHeads, t, d), random(b, kvHeads, t, d));
            NDArray q = manager.randomNormal(new Shape(b, heads, t, d)).muli(2); // sharper softmax
            NDArray mask = AttentionMask.build(manager, t, past, null, DataType.FLOAT32);
            assertKernelEqualsEngine(q, kv, mask, AttentionScores.standard(d));
        }
    }

    @Test
    void leftPaddedBatchesTakeEachSequencesMaskAndPaddingRowsMatchTheEngine() {
        int b = 4;
        int t = 30;
        float[] real = new float[b * t];
        for (int row = 0; row < b; row++) {
            for (int j = 7 * row; j < t; j++) { // left padding of 7·row tokens
                real[row * t + j] = 1;
            }
        }
        NDArray padding = manager.create(real, new Shape(b, t));
        NDArray mask = AttentionMask.build(manager, t, 0, padding, DataType.FLOAT32); // (B, 1, T, T)
        NDArray q = manager.randomNormal(new Shape(b, 8, t, 64));
        // the padding queries see no key at all: the engine's softmax then spreads over every key
        assertKernelEqualsEngine(q, KeyValues.of(random(b, 4, t, 64), random(b, 4, t, 64)), mask,
                AttentionScores.standard(64));
    }

    @Test
    void slidingWindowMasksSkipTheKeysBeforeTheWindow() {
        int t = 50;
        long[] keys = new long[t];
        for (int j = 0; j < t; j++) {
            keys[j] = j;
        }
        NDArray mask = AttentionMask.window(manager, t, 0, keys, 16, null, DataType.FLOAT32);
        NDArray q = manager.randomNormal(new Shape(2, 4, t, 32)).muli(2);
        assertKernelEqualsEngine(q, KeyValues.of(random(2, 2, t, 32), random(2, 2, t, 32)), mask,
                AttentionScores.standard(32));
    }

    @Test
    void withoutAMaskEveryKeyIsAttended() {
        NDArray q = manager.randomNormal(new Shape(1, 4, 12, 64));
        assertKernelEqualsEngine(q, KeyValues.of(random(1, 4, 20, 64), random(1, 4, 20, 64)), null,
                AttentionScores.standard(64));
    }

    /** Gemma 2's soft-capped scores, with its query_pre_attn_scalar, the mask after the cap. */
    @ParameterizedTest(name = "cap={0}")
    @CsvSource({"50", "2", "0.5", "400"})
    void softCappedScoresEqualTheEnginesCappedAttention(double cap) {
        int t = 21;
        NDArray q = manager.randomNormal(new Shape(2, 8, t, 256)).muli(4); // scores of tens
        NDArray mask = AttentionMask.build(manager, t, 0, null, DataType.FLOAT32);
        assertKernelEqualsEngine(q, KeyValues.of(random(2, 4, t, 256), random(2, 4, t, 256)), mask,
                new AttentionScores(1 / Math.sqrt(224), cap));
    }

    @Test
    void queriesAndValuesThatAreViewsOfAProjectionAreRead() {
        // GPT-2 and a cache-free pass: heads as transposed views of (B, T, H·D) rows.
        int t = 24;
        NDArray qkv = manager.randomNormal(new Shape(2, t, 3 * 6, 64)).transpose(0, 2, 1, 3); // (B, 3H, T, D)
        NDArray q = qkv.split(3, 1).get(0);
        NDArray k = qkv.split(3, 1).get(1);
        NDArray v = qkv.split(3, 1).get(2);
        NDArray mask = AttentionMask.build(manager, t, 0, null, DataType.FLOAT32);
        assertKernelEqualsEngine(q, KeyValues.of(k, v), mask, AttentionScores.standard(64));
    }

    @Test
    void theSeamTakesTheKernelForInferenceOnly() {
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: nothing is split");
        int t = 128;
        NDArray q = manager.randomNormal(new Shape(1, 12, t, 64));
        KeyValues kv = KeyValues.of(random(1, 4, t, 64), random(1, 4, t, 64));
        NDArray mask = AttentionMask.build(manager, t, 0, null, DataType.FLOAT32);
        assertTrue(q.size() * t >= PrefillAttention.SPLIT_MIN_WORK, "split across the cores");
        NDArray out = kernels.attend(q, kv, mask, 0f, false);
        NDArray kernel = PrefillAttention.attend(q, kv, mask, AttentionScores.standard(64));
        assertArrayEquals(kernel.toFloatArray(), out.toFloatArray(), 0f, "the seam ran the kernel");
        NDArray engine = ScaledDotProductAttention.attend(q, kv.keys(), kv.values(), mask, 0, false);
        assertArrayEquals(engine.toFloatArray(), out.toFloatArray(), RoundingBound.ofAttention(q, kv.keys(), kv.values()));
    }

    @Test
    void whatTheKernelDoesNotComputeIsLeftToTheEngine() {
        KeyValues kv = KeyValues.of(random(2, 4, 20, 64), random(2, 4, 20, 64));
        NDArray q = manager.randomNormal(new Shape(2, 4, 20, 64));
        assertTrue(PrefillAttention.applies(q, kv, null));
        assertFalse(PrefillAttention.applies(manager.randomNormal(new Shape(2, 4, 1, 64)), kv, null),
                "one query per sequence (a decode step)");
        assertFalse(PrefillAttention.applies(manager.randomNormal(new Shape(2, 6, 20, 64)), kv, null),
                "query heads not a multiple of key/value heads");
        assertFalse(PrefillAttention.applies(manager.randomNormal(new Shape(3, 4, 20, 64)), kv, null),
                "another batch");
        assertFalse(PrefillAttention.applies(q, kv, manager.zeros(new Shape(2, 1, 20, 21))), "a mask of another length");
        assertFalse(PrefillAttention.applies(q, kv, manager.zeros(new Shape(2, 20, 20))), "a mask of another rank");
        KeyValues wide = KeyValues.of(random(1, 1, 8, 320), random(1, 1, 8, 320));
        assertFalse(PrefillAttention.applies(manager.randomNormal(new Shape(1, 1, 8, 320)), wide, null),
                "heads wider than 256");
        assertFalse(PrefillAttention.applies(q.toType(DataType.FLOAT64, false),
                KeyValues.of(kv.keys().toType(DataType.FLOAT64, false), kv.values().toType(DataType.FLOAT64, false)),
                null), "float64");
    }
}
