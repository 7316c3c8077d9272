package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.AttentionMask;
import io.github.djlllmzoo.blocks.KeyValues;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.ScaledDotProductAttention;
import org.junit.jupiter.api.Test;

class SplitAttentionTest extends ManagedArraysTest {

    @Test
    void attentionSplitBySequencesEqualsOneCallWithEachSequencesOwnMask() {
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: nothing is split");
        long b = 5; // not divisible by the core count
        long s = 700;
        NDArray q = manager.randomNormal(new Shape(b, 4, 1, 64)); // (B, H, T, D)
        NDArray k = manager.randomNormal(new Shape(b, 4, s, 64));
        NDArray v = manager.randomNormal(new Shape(b, 4, s, 64));
        float[] padding = new float[(int) (b * s)];
        for (int row = 0; row < b; row++) {
            for (int j = 0; j < 3 * row; j++) {
                padding[(int) (row * s + j)] = Float.NEGATIVE_INFINITY; // left padding of 3·row tokens
            }
        }
        NDArray mask = manager.create(padding, new Shape(b, 1, 1, s)); // (B, 1, T, S)
        assertSplitEqualsOneCall(q, k, v, mask);
    }

    @Test
    void attentionOfOneSequenceIsSplitByKeyValueHeadsKeepingEachGroupsQueries() {
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: nothing is split");
        long s = 1100;
        NDArray q = manager.randomNormal(new Shape(1, 12, 1, 64)); // 12 query heads
        NDArray k = manager.randomNormal(new Shape(1, 3, s, 64)); // 3 key/value heads: groups of 4
        NDArray v = manager.randomNormal(new Shape(1, 3, s, 64));
        assertSplitEqualsOneCall(q, k, v, null);
    }

    @Test
    void aCausalPrefillIsSplitByHeadsUnderTheSharedMask() {
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: nothing is split");
        int t = 96;
        NDArray q = manager.randomNormal(new Shape(1, 6, t, 32));
        NDArray k = manager.randomNormal(new Shape(1, 6, t, 32));
        NDArray v = manager.randomNormal(new Shape(1, 6, t, 32));
        NDArray mask = AttentionMask.build(manager, t, 0, null, DataType.FLOAT32); // (1, 1, T, T)
        assertSplitEqualsOneCall(q, k, v, mask);
    }

    @Test
    void smallAttentionIsNotSplit() {
        NDArray q = manager.randomNormal(new Shape(1, 12, 1, 64));
        NDArray k = manager.randomNormal(new Shape(1, 12, 100, 64)); // an early decode step
        NDArray v = manager.randomNormal(new Shape(1, 12, 100, 64));
        assertNull(SplitAttention.attend(q, k, v, null));
    }

    @Test
    void aSplitLeavesNoArrayBehindOutsideTheCallersScope() {
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: nothing is split");
        NDArray k = manager.randomNormal(new Shape(4, 4, 600, 64));
        NDArray v = manager.randomNormal(new Shape(4, 4, 600, 64));
        int arrays = manager.getManagedArrays().size();
        for (int step = 0; step < 3; step++) {
            try (NDManager scope = manager.newSubManager()) {
                NDArray q = scope.randomNormal(new Shape(4, 4, 1, 64));
                NDArray out = new CpuKernels().attend(q, KeyValues.of(k, v), null, 0, false);
                assertEquals(scope, out.getManager());
            }
            assertEquals(arrays, manager.getManagedArrays().size(), "arrays of the cache's manager, step " + step);
        }
    }

    private static void assertSplitEqualsOneCall(NDArray q, NDArray k, NDArray v, NDArray mask) {
        NDArray split = SplitAttention.attend(q, k, v, mask);
        assertNotNull(split, "attention of this size is split");
        NDArray once = ScaledDotProductAttention.attend(q, k, v, mask, 0, false);
        assertEquals(once.getShape(), split.getShape());
        float bound = RoundingBound.ofAttention(q, k, v);
        assertArrayEquals(once.toFloatArray(), split.toFloatArray(), bound);
        assertArrayEquals(
                once.toFloatArray(), new CpuKernels().attend(q, KeyValues.of(k, v), mask, 0, false).toFloatArray(), bound);
    }
}
