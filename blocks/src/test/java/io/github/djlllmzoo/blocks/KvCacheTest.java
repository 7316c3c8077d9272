package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class KvCacheTest {

    private static final int HEADS = 2;
    private static final int DIM = 3;

    private static NDArray filled(NDManager manager, int positions, float value) {
        return manager.full(new Shape(1, HEADS, positions, DIM), value);
    }

    @Test
    void updateReturnsViewsOfTheBuffersNotCopies() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
                KvCache cache = new KvCache(manager, new int[1], 1, HEADS, DIM, 8, 8, DataType.FLOAT32);
                NDManager step = manager.newSubManager()) {
            KeyValues first = cache.update(0, filled(step, 2, 1f), filled(step, 2, -1f));
            KeyValues second = cache.update(0, filled(step, 1, 7f), filled(step, 1, -7f));
            // The views handed out by the first update see the second write: they alias the buffer.
            NDArray earlierKeys = first.keys();
            assertEquals(new Shape(1, HEADS, 2, DIM), earlierKeys.getShape());
            NDArray keys = second.keys();
            assertEquals(new Shape(1, HEADS, 3, DIM), keys.getShape());
            keys.set(new NDIndex(":, :, 0, :"), 5f);
            assertArrayEquals(new float[] {5f, 5f, 5f}, earlierKeys.get("0, 0, 0, :").toFloatArray(), 0f);
            assertArrayEquals(new float[] {7f, 7f, 7f}, keys.get("0, 1, 2, :").toFloatArray(), 0f);
            assertArrayEquals(new float[] {-1f, -1f, -1f}, second.values().get("0, 0, 1, :").toFloatArray(), 0f);
            assertEquals(step, keys.getManager());
            assertSame(first.keyBuffer(), second.keyBuffer(), "both read the layer's one buffer");
            assertEquals(new Shape(1, HEADS, 8, DIM), second.keyBuffer().getShape());
            assertEquals(3, second.length());
        }
    }

    @Test
    void theCacheCountsThePositionsEveryLayerStored() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
                KvCache cache = new KvCache(manager, new int[2], 1, HEADS, DIM, 8, 8, DataType.FLOAT32);
                NDManager step = manager.newSubManager()) {
            cache.update(0, filled(step, 3, 1f), filled(step, 3, 1f));
            assertEquals(0, cache.length(), "layer 1 has stored nothing yet");
            cache.update(1, filled(step, 3, 2f), filled(step, 3, 2f));
            assertEquals(3, cache.length());
            KeyValues next = cache.update(0, filled(step, 1, 4f), filled(step, 1, 4f));
            assertEquals(4, next.length(), "the next update goes after what the layer stored");
            assertArrayEquals(new float[] {4f, 4f, 4f}, next.keys().get("0, 1, 3, :").toFloatArray(), 0f);
            KeyValues stored = cache.read(1, step);
            assertEquals(new Shape(1, HEADS, 3, DIM), stored.values().getShape());
            assertArrayEquals(new float[] {2f, 2f, 2f}, stored.values().get("0, 0, 2, :").toFloatArray(), 0f);
            cache.truncate(2);
            assertEquals(2, cache.length());
            assertEquals(3, cache.update(1, filled(step, 1, 9f), filled(step, 1, 9f)).length());
            assertThrows(IllegalArgumentException.class, () -> cache.truncate(3), "layer 0 holds 2 after truncation");
        }
    }

    @Test
    void growingKeepsWhatWasStored() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
                KvCache cache = new KvCache(manager, new int[2], 1, HEADS, DIM, 2, 16, DataType.FLOAT32);
                NDManager step = manager.newSubManager()) {
            for (int layer = 0; layer < 2; layer++) {
                cache.update(layer, filled(step, 2, layer + 1), filled(step, 2, -(layer + 1)));
            }
            KeyValues grown = cache.update(1, filled(step, 3, 9f), filled(step, 3, -9f));
            assertEquals(new Shape(1, HEADS, 5, DIM), grown.keys().getShape());
            assertArrayEquals(new float[] {2f, 2f, 2f}, grown.keys().get("0, 1, 1, :").toFloatArray(), 0f);
            assertArrayEquals(new float[] {-9f, -9f, -9f}, grown.values().get("0, 0, 4, :").toFloatArray(), 0f);
            assertTrue(grown.keyBuffer().getShape().get(2) >= 5);
        }
    }

    @Test
    void keysAndValuesWithoutACacheHaveNoBuffers() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            NDArray k = filled(manager, 4, 1f);
            NDArray v = filled(manager, 4, 2f);
            KeyValues kv = KeyValues.of(k, v);
            assertSame(k, kv.keys());
            assertSame(v, kv.values());
            assertEquals(4, kv.length());
            assertNull(kv.keyBuffer());
            assertNull(kv.valueBuffer());
        }
    }

    /** Each way of reading or changing a layer after a decode step's update. */
    private static final String[] READERS = {"keyBuffer", "keys", "read", "next update", "truncate"};

    /**
     * A decode step's new key and value are left for the attention kernel to write ({@link
     * KeyValues#pending()}), and anything else that reads the buffers finds them written, by the
     * window cache's ring too.
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 3})
    void aDecodeStepsPendingPositionIsWrittenBeforeAnythingReadsTheBuffers(int window) {
        for (String reader : READERS) {
            try (NDManager manager = NDManager.newBaseManager("PyTorch");
                    KvCache cache = new KvCache(manager, new int[] {window}, 1, HEADS, DIM, 8, 8, DataType.FLOAT32);
                    NDManager step = manager.newSubManager()) {
                cache.update(0, filled(step, 2, 1f), filled(step, 2, -1f));
                cache.update(0, filled(step, 1, 2f), filled(step, 1, -2f)); // fills a 3-slot ring
                KeyValues kv = cache.update(0, filled(step, 1, 3f), filled(step, 1, -3f)); // position 3
                KeyValues.Pending pending = kv.pending();
                assertNotNull(pending, "left for the kernel");
                int slot = window == 0 ? 3 : 0; // past a window of 3, position 3 overwrites slot 0
                assertEquals(slot, pending.slot());
                BiConsumer<NDArray, Float> holds = (buffer, value) -> assertArrayEquals(
                        new float[] {value, value, value},
                        buffer.get(new NDIndex("0, 1, {}, :", slot)).toFloatArray(), 0f, reader);
                switch (reader) {
                    case "keyBuffer" -> {
                        holds.accept(kv.keyBuffer(), 3f);
                        holds.accept(kv.valueBuffer(), -3f);
                    }
                    case "keys" -> {
                        assertArrayEquals(new float[] {3f, 3f, 3f},
                                kv.keys().get(new NDIndex("0, 1, {}, :", slot)).toFloatArray(), 0f);
                        holds.accept(pending.valueBuffer(), -3f);
                    }
                    case "read" -> holds.accept(cache.read(0, step).keyBuffer(), 3f);
                    case "next update" -> {
                        cache.update(0, filled(step, 1, 4f), filled(step, 1, -4f));
                        holds.accept(pending.keyBuffer(), 3f);
                        holds.accept(pending.valueBuffer(), -3f);
                    }
                    default -> {
                        cache.truncate(4);
                        holds.accept(pending.keyBuffer(), 3f);
                    }
                }
                assertNull(kv.pending(), reader + " wrote it");
            }
        }
    }

    /**
     * A pass that failed after a layer's update and freed its arrays before attending leaves a
     * pending position whose arrays are gone: truncating the pass away drops it, and the cache
     * goes on.
     */
    @Test
    void aFailedPassesPendingPositionIsDroppedWhenItIsTruncatedAway() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
                KvCache cache = new KvCache(manager, new int[1], 1, HEADS, DIM, 8, 8, DataType.FLOAT32);
                NDManager step = manager.newSubManager()) {
            cache.update(0, filled(step, 2, 1f), filled(step, 2, -1f));
            try (NDManager failed = manager.newSubManager()) {
                cache.update(0, filled(failed, 1, 9f), filled(failed, 1, -9f));
            }
            cache.truncate(2);
            KeyValues next = cache.update(0, filled(step, 1, 5f), filled(step, 1, -5f));
            assertEquals(3, next.length());
            assertArrayEquals(new float[] {5f, 5f, 5f}, next.keys().get("0, 1, 2, :").toFloatArray(), 0f);
            assertArrayEquals(new float[] {-1f, -1f, -1f}, next.values().get("0, 0, 1, :").toFloatArray(), 0f);
        }
    }
}
