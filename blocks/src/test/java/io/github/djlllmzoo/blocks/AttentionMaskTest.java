package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.Test;

class AttentionMaskTest {

    @Test
    void queriesSeeOnlyEarlierKeysAfterThePastAndNoPadding() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            NDArray padding = manager.create(new long[] {0, 1, 1, 1, 1, 1, 1, 1}, new Shape(2, 4));
            NDArray mask = AttentionMask.build(manager, 2, 2, padding, DataType.FLOAT32);
            assertEquals(new Shape(2, 1, 2, 4), mask.getShape());
            float m = -Float.MAX_VALUE;
            float[] expected = {
                m, 0, 0, m, //
                m, 0, 0, 0, //
                0, 0, 0, m, //
                0, 0, 0, 0
            };
            assertArrayEquals(expected, mask.toFloatArray(), 0f);
        }
    }

    @Test
    void aSingleDecodeStepWithoutPaddingNeedsNoMask() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            assertNull(AttentionMask.build(manager, 1, 9, null, DataType.FLOAT32));
        }
    }
}
