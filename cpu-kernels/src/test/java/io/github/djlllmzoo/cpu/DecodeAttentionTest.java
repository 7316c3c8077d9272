package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.AttentionMask;
import io.github.djlllmzoo.blocks.AttentionScores;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.KeyValues;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.ScaledDotProductAttention;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import java.util.Arrays;

class DecodeAttentionTest extends ManagedArraysTest {

    private final CpuKernels kernels = new CpuKernels(true, true);

    @BeforeEach
    void kernelBuiltAndLoadedWhereTheCpuHasAvx512() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    /** A (B, H_kv, capacity, D) buffer whose first {@code length} positions are random, the rest NaN. */
    private NDArray buffer(long b, long kvHeads, int capacity, int length, long d) {
        NDArray buffer = manager.full(new Shape(b, kvHeads, capacity, d), Float.NaN);
        buffer.set(new NDIndex(":, :, :{}", length), manager.randomNormal(new Shape(b, kvHeads, length, d)));
        return buffer;
    }

    private static NDArray filled(NDArray buffer, int length) {
        return buffer.get(new NDIndex(":, :, :{}", length));
    }

    private static void assertKernelEqualsEngine(NDArray q, NDArray keys, NDArray values, int length, NDArray mask) {
        assertTrue(DecodeAttention.applies(q, keys, values, length, mask));
        NDArray kernel = DecodeAttention.attend(q, keys, values, length, mask);
        NDArray engine =
                ScaledDotProductAttention.attend(q, filled(keys, length), filled(values, length), mask, 0, false);
        assertEquals(q.getShape(), kernel.getShape());
        assertArrayEquals(engine.toFloatArray(), kernel.toFloatArray(),
                RoundingBound.ofAttention(q, filled(keys, length), filled(values, length)));
    }

    @ParameterizedTest(name = "B={0} H={1} H_kv={2} D={3} length={4} of {5}")
    @CsvSource({
        "1, 12, 12, 64, 1, 1", // the first position: one key
        "1, 12, 12, 64, 100, 130", // more positions than a tile, capacity beyond them never read
        "3, 4, 4, 128, 200, 200", // 128-wide heads (Llama 7B)
        "2, 8, 2, 64, 70, 80", // grouped query heads: 4 per key/value head
        "2, 6, 3, 24, 33, 40", // a head width not a multiple of 16
        "5, 2, 1, 80, 17, 17", // multi-query, 80-wide heads, a tile's tail
        "8, 12, 12, 64, 300, 320", // batch 8 of GPT-2 small's heads, split across the cores
    })
    void kernelEqualsTheEnginesAttentionOverTheFilledPositions(
            long b, long heads, long kvHeads, long d, int length, int capacity) {
        NDArray q = manager.randomNormal(new Shape(b, heads, 1, d)).muli(2); // sharper softmax
        assertKernelEqualsEngine(q, buffer(b, kvHeads, capacity, length, d), buffer(b, kvHeads, capacity, length, d),
                length, null);
    }

    @Test
    void eachSequenceTakesItsOwnPaddingMask() {
        int b = 4;
        int length = 50;
        float[] padding = new float[b * length];
        for (int row = 0; row < b; row++) {
            for (int j = 0; j < 7 * row; j++) { // left padding of 7·row tokens
                padding[row * length + j] = -AttentionMask.maskValue(DataType.FLOAT32);
            }
        }
        NDArray mask = manager.create(padding, new Shape(b, 1, 1, length)); // (B, 1, T, S)
        NDArray q = manager.randomNormal(new Shape(b, 4, 1, 64));
        assertKernelEqualsEngine(q, buffer(b, 4, 64, length, 64), buffer(b, 4, 64, length, 64), length, mask);
    }

    @Test
    void oneMaskRowIsSharedByAllSequences() {
        int length = 40;
        float[] row = new float[length];
        for (int j = 0; j < length; j += 3) {
            row[j] = Float.NEGATIVE_INFINITY;
        }
        NDArray mask = manager.create(row, new Shape(1, 1, 1, length));
        NDArray q = manager.randomNormal(new Shape(3, 2, 1, 64));
        assertKernelEqualsEngine(q, buffer(3, 2, 48, length, 64), buffer(3, 2, 48, length, 64), length, mask);
    }

    @Test
    void queriesThatAreAViewOfAFusedProjectionAreRead() {
        // GPT-2 splits its fused (B, 3H, 1, D) projection: the queries' rows are 3H·D apart.
        NDArray qkv = manager.randomNormal(new Shape(4, 3 * 6, 1, 64));
        NDArray q = qkv.split(3, 1).get(0); // (B, H, 1, D)
        assertKernelEqualsEngine(q, buffer(4, 6, 30, 30, 64), buffer(4, 6, 30, 30, 64), 30, null);
    }

    @Test
    void attentionLargeEnoughToSplitAcrossTheCoresEqualsTheEngine() {
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: nothing is split");
        // One sequence, 12 heads of 400 positions: 2.4 MB of keys and values, split by heads.
        assertTrue(2L * Float.BYTES * 12 * 400 * 64 >= DecodeAttention.SPLIT_MIN_BYTES);
        NDArray q = manager.randomNormal(new Shape(1, 12, 1, 64));
        assertKernelEqualsEngine(q, buffer(1, 12, 400, 400, 64), buffer(1, 12, 400, 400, 64), 400, null);
    }

    @Test
    void cachedAttentionWritesTheNewPositionAndAttendsOverItAsTheEngineDoes() {
        try (KvCache cache = new KvCache(manager, new int[2], 3, 2, 64, 16, 64, DataType.FLOAT32)) {
            NDArray prompt = manager.randomNormal(new Shape(3, 2, 10, 64));
            for (int layer = 0; layer < 2; layer++) {
                cache.update(layer, prompt, prompt.neg());
            }
            NDArray q = manager.randomNormal(new Shape(3, 4, 1, 64)); // 2 query heads per key/value head
            NDArray k = manager.randomNormal(new Shape(3, 2, 1, 64));
            NDArray v = manager.randomNormal(new Shape(3, 2, 1, 64));
            KeyValues kv = cache.update(1, k, v);
            assertTrue(kernels.takesDecodeKernel(q, kv, null, false), "a decode step over the cache");
            NDArray out = kernels.attend(q, kv, null, 0f, false);
            NDArray kernel = DecodeAttention.attend(q, kv.keyBuffer(), kv.valueBuffer(), kv.length(), null);
            assertArrayEquals(kernel.toFloatArray(), out.toFloatArray(), 0f, "the seam ran the kernel");
            assertArrayEquals(k.toFloatArray(), kv.keys().get(":, :, 10:11, :").toFloatArray(), 0f);
            assertArrayEquals(v.toFloatArray(), kv.values().get(":, :, 10:11, :").toFloatArray(), 0f);
            NDArray engine = ScaledDotProductAttention.attend(q, kv.keys(), kv.values(), null, 0, false);
            assertArrayEquals(engine.toFloatArray(), out.toFloatArray(), RoundingBound.ofAttention(q, kv.keys(), kv.values()));
            assertFalse(kernels.takesDecodeKernel(q, kv, null, true), "a training pass");
            assertFalse(new CpuKernels(true, false).takesDecodeKernel(q, kv, null, false), "the kernel switched off");
            assertFalse(kernels.takesDecodeKernel(q, KeyValues.of(kv.keys(), kv.values()), null, false),
                    "keys and values not in a cache");
        }
    }

    @Test
    void whatTheKernelDoesNotComputeIsLeftToTheEngine() {
        NDArray keys = buffer(2, 4, 32, 20, 64);
        NDArray values = buffer(2, 4, 32, 20, 64);
        NDArray q = manager.randomNormal(new Shape(2, 4, 1, 64));
        assertTrue(DecodeAttention.applies(q, keys, values, 20, null));
        assertFalse(DecodeAttention.applies(manager.randomNormal(new Shape(2, 4, 3, 64)), keys, values, 20, null),
                "several queries per sequence (a prefill)");
        assertFalse(DecodeAttention.applies(q, keys, values, 33, null), "more positions than the buffer holds");
        assertFalse(DecodeAttention.applies(q, keys, values, 0, null), "no position");
        assertFalse(DecodeAttention.applies(manager.randomNormal(new Shape(2, 6, 1, 64)), keys, values, 20, null),
                "query heads not a multiple of key/value heads");
        assertFalse(DecodeAttention.applies(manager.randomNormal(new Shape(3, 4, 1, 64)), keys, values, 20, null),
                "another batch");
        assertFalse(DecodeAttention.applies(q, keys, filled(values, 20), 20, null), "buffers of different shapes");
        NDArray strided = buffer(2, 4, 64, 40, 64).get(":, :, ::2, :"); // (2, 4, 32, 64), every other row
        assertFalse(DecodeAttention.applies(q, strided, strided, 20, null), "buffers that are strided views");
        NDArray wide = buffer(1, 1, 8, 8, 320);
        assertFalse(DecodeAttention.applies(manager.randomNormal(new Shape(1, 1, 1, 320)), wide, wide, 8, null),
                "heads wider than 256");
        assertFalse(DecodeAttention.applies(q, keys, values, 20, manager.zeros(new Shape(2, 1, 1, 21))),
                "a mask of another length");
        assertFalse(DecodeAttention.applies(q, keys, values, 20, manager.zeros(new Shape(2, 20))),
                "a mask of another rank");
        assertFalse(DecodeAttention.applies(q.toType(DataType.FLOAT64, false), keys.toType(DataType.FLOAT64, false),
                values.toType(DataType.FLOAT64, false), 20, null), "float64");
    }

    /**
     * Soft-capped scores (Gemma 2's attn_logit_softcapping): caps from one that bends every score
     * hard to one that leaves them nearly linear, so both of the kernel's tanh branches (|s / C|
     * below and above 0.625) and its saturation are taken; with a padding mask, which comes after
     * the cap.
     */
    @ParameterizedTest(name = "B={0} H={1} H_kv={2} D={3} length={4} cap={5}")
    @CsvSource({
        "1, 8, 4, 256, 1, 50", // gemma-2-2b's heads, the first position
        "2, 8, 4, 256, 90, 50", // gemma-2-2b's heads and cap, past a tile
        "3, 4, 2, 64, 70, 2", // a cap well below the scores: most saturate
        "2, 6, 3, 24, 33, 0.5", // a head width not a multiple of 16, every score saturated
        "2, 4, 4, 128, 40, 400", // a cap far above the scores: tanh's small-argument branch
    })
    void softCappedScoresEqualTheEnginesCappedAttention(
            long b, long heads, long kvHeads, long d, int length, double cap) {
        NDArray q = manager.randomNormal(new Shape(b, heads, 1, d)).muli(4); // scores of tens
        AttentionScores scores = new AttentionScores(1 / Math.sqrt(d), cap);
        float[] padding = new float[(int) b * length];
        for (int row = 0; row < b; row++) {
            for (int j = 0; j < Math.min(3 * row, length - 1); j++) {
                padding[row * length + j] = -AttentionMask.maskValue(DataType.FLOAT32);
            }
        }
        NDArray mask = manager.create(padding, new Shape(b, 1, 1, length)); // (B, 1, T, S)
        NDArray keys = buffer(b, kvHeads, length + 5, length, d);
        NDArray values = buffer(b, kvHeads, length + 5, length, d);
        assertTrue(DecodeAttention.applies(q, keys, values, length, mask));
        NDArray kernel = DecodeAttention.attend(q, keys, values, length, mask, scores);
        NDArray engine = ScaledDotProductAttention.attend(
                q, filled(keys, length), filled(values, length), mask, scores, 0, false);
        assertArrayEquals(engine.toFloatArray(), kernel.toFloatArray(),
                RoundingBound.ofAttention(q, filled(keys, length), filled(values, length), scores));
    }

    @Test
    void gemmaScaledAndSoftCappedScoresTakeTheKernel() {
        try (KvCache cache = new KvCache(manager, new int[1], 2, 2, 32, 16, 64, DataType.FLOAT32)) {
            cache.update(0, manager.randomNormal(new Shape(2, 2, 9, 32)), manager.randomNormal(new Shape(2, 2, 9, 32)));
            NDArray q = manager.randomNormal(new Shape(2, 4, 1, 32)).muli(3); // scores large enough to cap
            KeyValues kv = cache.update(0, manager.randomNormal(new Shape(2, 2, 1, 32)),
                    manager.randomNormal(new Shape(2, 2, 1, 32)));
            assertTrue(kernels.takesDecodeKernel(q, kv, null, false));

            AttentionScores scaled = new AttentionScores(1 / Math.sqrt(24), 0); // query_pre_attn_scalar 24
            NDArray engine = ScaledDotProductAttention.attend(q, kv.keys(), kv.values(), null, scaled, 0, false);
            NDArray kernel = DecodeAttention.attend(q, kv.keyBuffer(), kv.valueBuffer(), kv.length(), null, scaled);
            assertArrayEquals(kernel.toFloatArray(), kernels.attend(q, kv, null, scaled, 0f, false).toFloatArray(), 0f,
                    "the seam ran the kernel");
            assertArrayEquals(engine.toFloatArray(), kernel.toFloatArray(),
                    RoundingBound.ofAttention(q, kv.keys(), kv.values(), scaled));

            AttentionScores capped = new AttentionScores(1 / Math.sqrt(24), 2);
            NDArray cappedEngine = ScaledDotProductAttention.attend(q, kv.keys(), kv.values(), null, capped, 0, false);
            NDArray cappedKernel =
                    DecodeAttention.attend(q, kv.keyBuffer(), kv.valueBuffer(), kv.length(), null, capped);
            assertArrayEquals(cappedKernel.toFloatArray(), kernels.attend(q, kv, null, capped, 0f, false).toFloatArray(),
                    0f, "the seam ran the kernel");
            assertArrayEquals(cappedEngine.toFloatArray(), cappedKernel.toFloatArray(),
                    RoundingBound.ofAttention(q, kv.keys(), kv.values(), capped));
            assertFalse(
                    Arrays.equals(engine.toFloatArray(), cappedEngine.toFloatArray()), "capping changes the result");
        }
    }

    /**
     * Decode steps through the seam: the kernel writes each step's new key and value into the
     * cache itself (nothing is left pending), where a sliding window's ring puts them too, and
     * attends over them as the engine does over a cache the engine wrote; the buffers end equal.
     * With {@code -Dllmzoo.cpu.off=decodeAttention.writeCache} the engine writes them first, to the
     * same result.
     */
    @ParameterizedTest(name = "window {0}, prompt {1}, kernel writes {2}")
    @CsvSource({ // a ring overwritten past its window; a cache large enough to split; the engine writing
        "4, 3, true", "0, 200, true", "4, 3, false", "0, 200, false"})
    void decodeStepsWriteTheirNewPositionInTheKernelAndEqualTheEngine(int window, int prompt, boolean writes) {
        System.setProperty(KernelSwitches.PROPERTY, writes ? "" : DecodeAttention.WRITE_SWITCH);
        CpuKernels kernels;
        try {
            kernels = new CpuKernels(true, true);
        } finally {
            System.clearProperty(KernelSwitches.PROPERTY);
        }
        int[] windows = {window};
        try (KvCache viaKernel = new KvCache(manager, windows, 2, 2, 64, 8, 512, DataType.FLOAT32);
                KvCache viaEngine = new KvCache(manager, windows, 2, 2, 64, 8, 512, DataType.FLOAT32)) {
            NDArray k0 = manager.randomNormal(new Shape(2, 2, prompt, 64));
            NDArray v0 = manager.randomNormal(new Shape(2, 2, prompt, 64));
            viaKernel.update(0, k0, v0);
            viaEngine.update(0, k0, v0);
            for (int step = 0; step < 6; step++) {
                NDArray q = manager.randomNormal(new Shape(2, 4, 1, 64)); // 2 query heads per key/value head
                NDArray k = manager.randomNormal(new Shape(2, 2, 1, 64));
                NDArray v = manager.randomNormal(new Shape(2, 2, 1, 64));
                KeyValues kv = viaKernel.update(0, k, v);
                assertNotNull(kv.pending(), "step " + step + " left to the kernel");
                assertTrue(DecodeAttention.writes(kv.pending()), "step " + step + ": one the kernel writes");
                assertTrue(kernels.takesDecodeKernel(q, kv, null, false));
                NDArray out = kernels.attend(q, kv, null, 0f, false);
                assertNull(kv.pending(), "step " + step + ": written, by the kernel or the engine");
                KeyValues reference = viaEngine.update(0, k, v);
                NDArray engine = EngineKernels.INSTANCE.attend(q, reference, null, 0f, false);
                assertArrayEquals(engine.toFloatArray(), out.toFloatArray(),
                        RoundingBound.ofAttention(q, reference.keys(), reference.values()), "step " + step);
                assertArrayEquals(reference.keys().toFloatArray(), kv.keys().toFloatArray(), 0f, "step " + step);
                assertArrayEquals(reference.values().toFloatArray(), kv.values().toFloatArray(), 0f, "step " + step);
            }
        }
    }
}
