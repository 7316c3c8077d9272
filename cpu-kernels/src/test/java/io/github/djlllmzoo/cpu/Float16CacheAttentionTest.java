package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import io.github.djlllmzoo.blocks.SlotKvCache;
import java.util.Arrays;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The attention kernels over a float16 KV cache ({@code --kv-cache-dtype float16}) against the
 * engine's attention over the same float16 cache: the kernel rounds a decode step's new keys and
 * values into the cache exactly as the engine's conversion does (the buffers end bit for bit
 * equal), and widens every key and value exactly, so the results differ only by the float32
 * accumulation order ({@link RoundingBound#ofAttention}).
 */
class Float16CacheAttentionTest extends ManagedArraysTest {

    private final CpuKernels kernels = new CpuKernels(true, true);

    @BeforeEach
    void kernelBuiltAndLoaded() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    private static float[] floats(NDArray array) {
        return array.toType(DataType.FLOAT32, false).toFloatArray();
    }

    @ParameterizedTest(name = "window {0}, prompt {1}, head width {2}")
    @CsvSource({ // a ring overwritten past its window; a cache large enough to split; a head width not a multiple of 16
        "4, 3, 64", "0, 200, 64", "0, 37, 40"})
    void decodeStepsOverAFloat16CacheEqualTheEngineOverTheSameCache(int window, int prompt, int d) {
        int[] windows = {window};
        try (KvCache viaKernel = new KvCache(manager, windows, 2, 2, d, 8, 512, DataType.FLOAT32, DataType.FLOAT16);
                KvCache viaEngine = new KvCache(manager, windows, 2, 2, d, 8, 512, DataType.FLOAT32, DataType.FLOAT16)) {
            NDArray k0 = manager.randomNormal(new Shape(2, 2, prompt, d));
            NDArray v0 = manager.randomNormal(new Shape(2, 2, prompt, d));
            viaKernel.update(0, k0, v0);
            viaEngine.update(0, k0, v0);
            for (int step = 0; step < 6; step++) {
                NDArray q = manager.randomNormal(new Shape(2, 4, 1, d)); // 2 query heads per key/value head
                NDArray k = manager.randomNormal(new Shape(2, 2, 1, d));
                NDArray v = manager.randomNormal(new Shape(2, 2, 1, d));
                KeyValues kv = viaKernel.update(0, k, v);
                assertTrue(DecodeAttention.writes(kv.pending()), "step " + step + ": one the kernel writes");
                assertTrue(kernels.takesDecodeKernel(q, kv, null, false), "the kernel reads a float16 cache");
                NDArray out = kernels.attend(q, kv, null, 0f, false);
                assertNull(kv.pending(), "step " + step + ": the kernel wrote the new key and value");
                KeyValues reference = viaEngine.update(0, k, v);
                NDArray engine = EngineKernels.INSTANCE.attend(q, reference, null, 0f, false);
                assertEquals(DataType.FLOAT32, reference.keys().getDataType(), "the engine reads keys widened");
                assertArrayEquals(engine.toFloatArray(), out.toFloatArray(),
                        RoundingBound.ofAttention(q, reference.keys(), reference.values()), "step " + step);
                assertArrayEquals(floats(reference.keys()), floats(kv.keys()), 0f, "step " + step + ": keys rounded alike");
                assertArrayEquals(floats(reference.values()), floats(kv.values()), 0f, "step " + step);
            }
        }
    }

    @Test
    void decodeKeysAndValuesAreRoundedToNearestHalf() {
        try (KvCache cache = new KvCache(manager, new int[1], 1, 1, 16, 4, 8, DataType.FLOAT32, DataType.FLOAT16)) {
            // 1 + 2^-11 lies halfway between the halves 1 and 1 + 2^-10: to even, 1; 1 + 3 * 2^-11 to 1 + 2^-9
            float tie = 1 + 0x1p-11f;
            float tieUp = 1 + 3 * 0x1p-11f;
            float[] row = new float[16];
            Arrays.fill(row, tie);
            row[1] = tieUp;
            row[2] = 0.1f;
            NDArray k = manager.create(row, new Shape(1, 1, 1, 16));
            cache.update(0, k.concat(k, 2), k.concat(k, 2)); // a prompt of two positions, written by the engine
            KeyValues kv = cache.update(0, k, k); // a decode step, written by the kernel
            NDArray q = manager.ones(new Shape(1, 1, 1, 16));
            assertTrue(kernels.takesDecodeKernel(q, kv, null, false));
            kernels.attend(q, kv, null, 0f, false);
            float[] stored = floats(kv.keyBuffer().get(new NDIndex("0, 0, 2")));
            float[] byEngine = floats(kv.keyBuffer().get(new NDIndex("0, 0, 0")));
            assertEquals(1f, stored[0], "a tie rounds to the even half");
            assertEquals(1 + 0x1p-9f, stored[1], "a tie rounds to the even half, upwards");
            assertEquals(0.0999755859375f, stored[2], "0.1's nearest half");
            assertArrayEquals(byEngine, stored, 0f, "the kernel rounds as the engine does");
        }
    }

    @ParameterizedTest(name = "prompt {0} after {1}")
    @CsvSource({"9, 0", "40, 23"}) // a first prompt; a second chunk over positions already cached
    void prefillOverAFloat16CacheEqualsTheEngineOverTheSameCache(int t, int past) {
        try (KvCache cache = new KvCache(manager, new int[1], 1, 2, 64, 8, 512, DataType.FLOAT32, DataType.FLOAT16)) {
            if (past > 0) {
                cache.update(0, manager.randomNormal(new Shape(1, 2, past, 64)), manager.randomNormal(new Shape(1, 2, past, 64)));
            }
            NDArray q = manager.randomNormal(new Shape(1, 6, t, 64));
            KeyValues kv = cache.update(0, manager.randomNormal(new Shape(1, 2, t, 64)),
                    manager.randomNormal(new Shape(1, 2, t, 64)));
            NDArray mask = AttentionMask.build(manager, t, past, null, DataType.FLOAT32);
            assertTrue(PrefillAttention.applies(q, kv, mask), "the prefill kernel reads a float16 cache");
            NDArray out = PrefillAttention.attend(q, kv, mask, AttentionScores.standard(64));
            NDArray engine = ScaledDotProductAttention.attend(q, kv.keys(), kv.values(), mask,
                    AttentionScores.standard(64), 0, false);
            assertArrayEquals(engine.toFloatArray(), out.toFloatArray(),
                    RoundingBound.ofAttention(q, kv.keys(), kv.values()));
        }
    }

    @Test
    void slotCacheRowsOverAFloat16CacheEachEqualTheEngineOverThatRow() {
        int d = 64;
        AttentionScores scores = AttentionScores.standard(d);
        try (SlotKvCache cache = new SlotKvCache(manager, 1, 2, d, 256, DataType.FLOAT32, DataType.FLOAT16)) {
            cache.reserve(3, 64);
            int[] past = {5, 40, 17};
            for (int r = 0; r < past.length; r++) {
                NDArray prompt = manager.randomNormal(new Shape(1, 2, past[r], d));
                cache.prefillPass(r, past[r]).update(0, prompt, prompt.neg());
                cache.commitPrefill(r, past[r]);
            }
            NDArray q = manager.randomNormal(new Shape(3, 4, 1, d));
            NDArray k = manager.randomNormal(new Shape(3, 2, 1, d));
            KeyValues kv = cache.decodePass(3).update(0, k, k.neg());
            NDArray mask = AttentionMask.rows(manager, past, 0, DataType.FLOAT32);
            assertTrue(kernels.takesDecodeKernel(q, kv, mask, false));
            NDArray out = kernels.attend(q, kv, mask, scores, 0f, false);
            for (int r = 0; r < past.length; r++) {
                NDIndex own = new NDIndex("{}:{}, :, :{}", r, r + 1, past[r] + 1);
                NDArray keys = kv.keyBuffer().get(own).toType(DataType.FLOAT32, false);
                NDArray values = kv.valueBuffer().get(own).toType(DataType.FLOAT32, false);
                assertArrayEquals(floats(k.get(r).toType(DataType.FLOAT16, false)),
                        floats(kv.keyBuffer().get(new NDIndex("{}, :, {}", r, past[r]))), 0f, "row " + r + "'s key");
                NDArray qr = q.get(new NDIndex("{}:{}", r, r + 1));
                NDArray engine = ScaledDotProductAttention.attend(qr, keys, values, null, scores, 0, false);
                assertArrayEquals(engine.toFloatArray(), out.get(new NDIndex("{}:{}", r, r + 1)).toFloatArray(),
                        RoundingBound.ofAttention(qr, keys, values, scores), "row " + r);
            }
        }
    }
}
