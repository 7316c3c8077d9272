package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.Test;

class KvCacheTest {

    private static final int HEADS = 2;
    private static final int DIM = 3;

    private static NDArray filled(NDManager manager, int positions, float value) {
        return manager.full(new Shape(1, HEADS, positions, DIM), value);
    }

    @Test
    void appendReturnsViewsOfTheBuffersNotCopies() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
                KvCache cache = new KvCache(manager, 1, 1, HEADS, DIM, 8, 8, DataType.FLOAT32);
                NDManager step = manager.newSubManager()) {
            NDList first = cache.append(0, filled(step, 2, 1f), filled(step, 2, -1f));
            cache.advance(2);
            NDList second = cache.append(0, filled(step, 1, 7f), filled(step, 1, -7f));
            // The views handed out by the first append see the second write: they alias the buffer.
            NDArray earlierKeys = first.get(0);
            assertEquals(new Shape(1, HEADS, 2, DIM), earlierKeys.getShape());
            NDArray keys = second.get(0);
            assertEquals(new Shape(1, HEADS, 3, DIM), keys.getShape());
            keys.set(new NDIndex(":, :, 0, :"), 5f);
            assertArrayEquals(new float[] {5f, 5f, 5f}, earlierKeys.get("0, 0, 0, :").toFloatArray(), 0f);
            assertArrayEquals(new float[] {7f, 7f, 7f}, keys.get("0, 1, 2, :").toFloatArray(), 0f);
            assertArrayEquals(new float[] {-1f, -1f, -1f}, second.get(1).get("0, 0, 1, :").toFloatArray(), 0f);
            assertEquals(step, keys.getManager());
        }
    }

    @Test
    void growingKeepsWhatWasStored() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
                KvCache cache = new KvCache(manager, 2, 1, HEADS, DIM, 2, 16, DataType.FLOAT32);
                NDManager step = manager.newSubManager()) {
            for (int layer = 0; layer < 2; layer++) {
                cache.append(layer, filled(step, 2, layer + 1), filled(step, 2, -(layer + 1)));
            }
            cache.advance(2);
            NDList grown = cache.append(1, filled(step, 3, 9f), filled(step, 3, -9f));
            assertEquals(new Shape(1, HEADS, 5, DIM), grown.get(0).getShape());
            assertArrayEquals(new float[] {2f, 2f, 2f}, grown.get(0).get("0, 1, 1, :").toFloatArray(), 0f);
            assertArrayEquals(new float[] {-9f, -9f, -9f}, grown.get(1).get("0, 0, 4, :").toFloatArray(), 0f);
            assertEquals(true, cache.capacity() >= 5);
        }
    }
}
