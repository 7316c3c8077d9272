package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.AttentionMask;
import io.github.djlllmzoo.blocks.AttentionScores;
import io.github.djlllmzoo.blocks.KeyValues;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.ScaledDotProductAttention;
import io.github.djlllmzoo.blocks.SlotKvCache;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The decode kernel over a {@link SlotKvCache}, whose rows each hold a length of their own: each row
 * writes its new key and value at its own length and attends over its own positions only (those
 * past it hold NaN, which would spoil any row that read them), as the engine's attention over that
 * row alone.
 */
class SlotCacheDecodeAttentionTest extends ManagedArraysTest {

    private final CpuKernels kernels = new CpuKernels(true, true);

    @BeforeEach
    void kernelBuiltAndLoaded() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    @ParameterizedTest(name = "rows={0} of {1} H={2} H_kv={3} D={4} cap={5}")
    @CsvSource({
        "3, 4, 4, 2, 64, 0", // grouped heads, a narrowed view of the first 3 of 4 rows
        "5, 5, 8, 8, 128, 0", // every row of the buffers, 128-wide heads
        "2, 3, 6, 3, 24, 0", // a head width not a multiple of 16
        "4, 6, 8, 4, 256, 50", // Gemma 2's heads and soft cap
    })
    void eachRowWritesAtItsOwnLengthAndAttendsOverItsOwnPositionsOnly(
            int n, int rows, int heads, int kvHeads, int d, double cap) {
        AttentionScores scores = new AttentionScores(1 / Math.sqrt(d), cap);
        try (SlotKvCache cache = new SlotKvCache(manager, 1, kvHeads, d, 256, DataType.FLOAT32)) {
            cache.reserve(rows, 160);
            int[] past = new int[n];
            for (int r = 0; r < rows; r++) {
                NDArray poison = manager.full(new Shape(1, kvHeads, 150, d), Float.NaN);
                cache.prefillPass(r, 150).update(0, poison, poison);
                cache.commitPrefill(r, 150);
                cache.clear(r); // the NaN stay past the row's length
                int length = 1 + (37 * r + 11) % 120;
                NDArray prompt = manager.randomNormal(new Shape(1, kvHeads, length, d));
                cache.prefillPass(r, length).update(0, prompt, prompt.neg());
                cache.commitPrefill(r, length);
                if (r < n) {
                    past[r] = length;
                }
            }
            NDArray q = manager.randomNormal(new Shape(n, heads, 1, d)).muli(2);
            NDArray k = manager.randomNormal(new Shape(n, kvHeads, 1, d));
            NDArray v = manager.randomNormal(new Shape(n, kvHeads, 1, d));
            KeyValues kv = cache.decodePass(n).update(0, k, v);
            NDArray mask = AttentionMask.rows(manager, past, 0, DataType.FLOAT32);
            assertTrue(kernels.takesDecodeKernel(q, kv, mask, false), "the decode kernel takes the step");
            NDArray out = kernels.attend(q, kv, mask, scores, 0f, false);
            assertNull(kv.pending(), "the kernel wrote the new keys and values");
            NDArray keyBuffer = kv.keyBuffer();
            NDArray valueBuffer = kv.valueBuffer();
            for (int r = 0; r < n; r++) {
                NDIndex own = new NDIndex("{}:{}, :, :{}", r, r + 1, past[r] + 1);
                NDArray keys = keyBuffer.get(own);
                NDArray values = valueBuffer.get(own);
                assertArrayEquals(k.get(r).toFloatArray(),
                        keyBuffer.get(new NDIndex("{}, :, {}", r, past[r])).toFloatArray(), 0f, "row " + r + "'s key");
                assertArrayEquals(v.get(r).toFloatArray(),
                        valueBuffer.get(new NDIndex("{}, :, {}", r, past[r])).toFloatArray(), 0f);
                NDArray qr = q.get(new NDIndex("{}:{}", r, r + 1));
                NDArray engine = ScaledDotProductAttention.attend(qr, keys, values, null, scores, 0, false);
                assertArrayEquals(engine.toFloatArray(), out.get(new NDIndex("{}:{}", r, r + 1)).toFloatArray(),
                        RoundingBound.ofAttention(qr, keys, values, scores), "row " + r);
            }
        }
    }
}
