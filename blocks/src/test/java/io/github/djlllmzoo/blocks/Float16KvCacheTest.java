package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A KV cache that stores keys and values in float16 for a float32 model ({@link KvCacheDtype}):
 * stored rounded to the nearest half, read back by the engine's operations widened to float32, in
 * every cache policy (all positions, a sliding window's ring, a slot cache's rows).
 */
class Float16KvCacheTest {

    private NDManager manager;

    @BeforeEach
    void open() {
        manager = NDManager.newBaseManager("PyTorch");
    }

    @AfterEach
    void close() {
        manager.close();
    }

    private static float[] rounded(NDArray x) {
        return x.toType(DataType.FLOAT16, false).toType(DataType.FLOAT32, false).toFloatArray();
    }

    @Test
    void keysAndValuesAreStoredInHalvesAndReadAsTheComputeType() {
        for (int window : new int[] {0, 3}) {
            try (KvCache cache = new KvCache(manager, new int[] {window}, 1, 2, 8, 4, 64, DataType.FLOAT32,
                    DataType.FLOAT16)) {
                NDArray k = manager.randomNormal(new Shape(1, 2, 2, 8));
                NDArray v = manager.randomNormal(new Shape(1, 2, 2, 8));
                KeyValues kv = cache.update(0, k, v);
                assertEquals(DataType.FLOAT16, kv.keyBuffer().getDataType(), "window " + window);
                assertEquals(DataType.FLOAT32, kv.keys().getDataType(), "window " + window);
                assertArrayEquals(rounded(k), kv.keys().toFloatArray(), 0f, "window " + window);
                assertArrayEquals(rounded(v), kv.values().toFloatArray(), 0f, "window " + window);
                NDArray k2 = manager.randomNormal(new Shape(1, 2, 1, 8));
                KeyValues step = cache.update(0, k2, k2); // a decode step, written by the engine as it is read
                assertEquals(3, step.length());
                assertArrayEquals(rounded(k2), step.keys().get(":, :, 2:3").toFloatArray(), 0f, "window " + window);
                NDArray k3 = manager.randomNormal(new Shape(1, 2, 3, 8)); // past a window of 3: the ring's concat
                KeyValues past = cache.update(0, k3, k3);
                assertEquals(DataType.FLOAT32, past.keys().getDataType(), "window " + window);
                assertArrayEquals(rounded(k3), past.keys().get(":, :, -3:").toFloatArray(), 0f, "window " + window);
            }
        }
    }

    @Test
    void aSlotCachePositionTakesHalfTheBytesAndItsRowsReadWidened() {
        try (SlotKvCache float32 = new SlotKvCache(manager, 3, 2, 8, 64, DataType.FLOAT32);
                SlotKvCache float16 = new SlotKvCache(manager, 3, 2, 8, 64, DataType.FLOAT32, DataType.FLOAT16)) {
            assertEquals(float32.bytesPerPosition(), 2 * float16.bytesPerPosition());
            float16.reserve(2, 8);
            NDArray k = manager.randomNormal(new Shape(1, 2, 5, 8));
            KeyValues kv = float16.prefillPass(1, 5).update(0, k, k);
            assertEquals(DataType.FLOAT32, kv.keys().getDataType());
            assertArrayEquals(rounded(k), kv.keys().toFloatArray(), 0f);
        }
    }

    @Test
    void anUnknownCacheTypeIsRefusedNamingTheOption() {
        assertEquals(KvCacheDtype.FLOAT16, KvCacheDtype.parse("F16", KvCacheDtype.OPTION));
        assertEquals(KvCacheDtype.FLOAT32, KvCacheDtype.parse("float32", KvCacheDtype.OPTION));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> KvCacheDtype.parse("bfloat16", KvCacheDtype.OPTION));
        assertEquals("--kv-cache-dtype must be float32 or float16, not 'bfloat16'", e.getMessage());
    }
}
