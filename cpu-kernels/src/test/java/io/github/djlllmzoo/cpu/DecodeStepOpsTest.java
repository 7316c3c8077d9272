package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.RotaryEmbedding;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A decode step's calls around its products: the query and key heads rotated in one native call
 * ({@link DecodeOps#rotatePairInPlace}) and the greedy pick scanned in the logits' memory ({@link
 * DecodeOps#argMax}), each against the path its switch leaves.
 */
class DecodeStepOpsTest extends ManagedArraysTest {

    private final CpuKernels kernels = new CpuKernels(true, true);

    @BeforeEach
    void kernelsBuiltAndLoadedWhereTheCpuHasAvx512() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    /** The same arithmetic in the same order as two {@code rotateInPlace} calls: equal bit for bit. */
    @ParameterizedTest(name = "B={0} H={1} H_kv={2} D={3} per sequence={4}")
    @CsvSource({
        "1, 32, 4, 64, false", // a decode step of TinyLlama's shape
        "1, 14, 2, 64, false", // Qwen2.5-0.5B's
        "8, 12, 4, 64, true", // batch 8, each sequence its own position
        "3, 6, 6, 10, false", // a half of 5 (not a multiple of the vector width)
    })
    void rotatingQueriesAndKeysInOneCallEqualsTwoCallsBitForBit(
            long b, long heads, long kvHeads, int d, boolean perSequence) {
        CpuKernels apart = SwitchedKernels.without(DecodeOps.ROTATE_PAIR_SWITCH);
        RotaryEmbedding rope = new RotaryEmbedding(d, 256, 10000, null);
        NDList cosSin = rope.cosSin(
                manager.randomInteger(0, 256, new Shape(perSequence ? b : 1, 1), DataType.INT64), manager,
                DataType.FLOAT32);
        NDArray q = manager.randomNormal(new Shape(b, heads, 1, d)).muli(3);
        NDArray k = manager.randomNormal(new Shape(b, kvHeads, 1, d)).muli(3);
        NDArray q2 = q.duplicate();
        NDArray k2 = k.duplicate();
        NDArray[] expected = apart.rotate(q, k, cosSin, false);
        NDArray[] pair = DecodeOps.rotatePairInPlace(q2, k2, cosSin);
        assertNotNull(pair, "the pair's kernel takes a decode step's heads");
        assertSame(q2, pair[0]);
        assertSame(k2, pair[1]);
        assertArrayEquals(expected[0].toFloatArray(), pair[0].toFloatArray());
        assertArrayEquals(expected[1].toFloatArray(), pair[1].toFloatArray());
    }

    /**
     * Every layer of a pass rotates by one list of factors, which is checked once; a later pass's
     * list (here at another position, the first one's arrays freed) is read afresh.
     */
    @Test
    void aLaterPassesFactorsAreReadAfresh() {
        RotaryEmbedding rope = new RotaryEmbedding(64, 256, 10000, null);
        CpuKernels apart = SwitchedKernels.without(DecodeOps.ROTATE_PAIR_SWITCH);
        for (long position : new long[] {3, 3, 200, 17}) {
            try (NDManager pass = manager.newSubManager()) {
                NDList cosSin = rope.cosSin(pass.create(new long[] {position}, new Shape(1, 1)), manager,
                        DataType.FLOAT32);
                for (int layer = 0; layer < 3; layer++) {
                    NDArray q = pass.randomNormal(new Shape(1, 8, 1, 64));
                    NDArray k = pass.randomNormal(new Shape(1, 2, 1, 64));
                    NDArray[] expected = apart.rotate(q.duplicate(), k.duplicate(), cosSin, false);
                    NDArray[] actual = kernels.rotate(q, k, cosSin, false);
                    assertSame(q, actual[0], "rotated in place");
                    assertArrayEquals(expected[0].toFloatArray(), actual[0].toFloatArray());
                    assertArrayEquals(expected[1].toFloatArray(), actual[1].toFloatArray());
                }
            }
        }
    }

    /** Heads the pair's kernel does not take (views, or as many as a split is for) are left to the caller. */
    @Test
    void headsOfAPrefillAreLeftToTheSeparateRotations() {
        RotaryEmbedding rope = new RotaryEmbedding(64, 256, 10000, null);
        NDList cosSin = rope.cosSin(manager.arange(0, 128, 1, DataType.INT64).reshape(1, 128), manager,
                DataType.FLOAT32);
        NDArray views = manager.randomNormal(new Shape(1, 128, 4, 64)).transpose(0, 2, 1, 3);
        assertNull(DecodeOps.rotatePairInPlace(views, views.duplicate(), cosSin));
        NDArray big = manager.randomNormal(new Shape(1, 32, 128, 64));
        assertNull(DecodeOps.rotatePairInPlace(big, big.duplicate(), cosSin));
    }

    /**
     * The engine's argMax: the first index on ties (also of 0 and -0), a row's first NaN wherever its
     * maximum is, the first of a row of -infinity, +infinity over any finite value; rows whose length
     * is not a multiple of the scan's lanes, and one of a single element.
     */
    @ParameterizedTest(name = "rows={0} V={1}")
    @CsvSource({
        "1, 32000", // a decode step of TinyLlama's vocabulary
        "8, 151936", // batch 8 of Qwen2.5's
        "12, 37", // narrower than three lanes' runs
        "12, 1", // one element
    })
    void argMaxEqualsTheEnginesBitForBit(int rows, int width) {
        float[] values = manager.randomNormal(new Shape(rows, 1, width)).muli(5).toFloatArray();
        for (int r = 0; r < rows; r++) {
            int at = r * width;
            switch (r % 6) {
                case 1 -> { // a tie: the maximum twice
                    values[at + width - 1] = 100f;
                    values[at + width / 3] = 100f;
                }
                case 2 -> { // a NaN after the maximum, and another after it
                    values[at] = 100f;
                    values[at + width / 2] = Float.NaN;
                    values[at + width - 1] = Float.NaN;
                }
                case 3 -> java.util.Arrays.fill(values, at, at + width, Float.NEGATIVE_INFINITY);
                case 4 -> { // -0 then 0 as the maximum
                    java.util.Arrays.fill(values, at, at + width, -1f);
                    values[at + width - 1] = 0f;
                    values[at + width / 2] = -0f;
                }
                case 5 -> values[at + width * 2 / 3] = Float.POSITIVE_INFINITY;
                default -> { }
            }
        }
        NDArray logits = manager.create(values, new Shape(rows, 1, width));
        long[] engine = EngineKernels.INSTANCE.argMax(logits);
        assertTrue(DecodeOps.takesArgMax(logits));
        assertArrayEquals(engine, DecodeOps.argMax(logits));
        assertArrayEquals(engine, kernels.argMax(logits));
        assertArrayEquals(engine, SwitchedKernels.without(DecodeOps.ARG_MAX_SWITCH).argMax(logits));
    }

    /** Logits the scan does not take (not float32, or a view) are picked by the engine. */
    @Test
    void logitsTheScanDoesNotTakeArePickedByTheEngine() {
        NDArray wide = manager.randomNormal(new Shape(2, 1, 50)).toType(DataType.FLOAT64, false);
        NDArray view = manager.randomNormal(new Shape(50, 2)).transpose();
        for (NDArray logits : new NDArray[] {wide, view}) {
            assertTrue(!DecodeOps.takesArgMax(logits));
            assertArrayEquals(logits.argMax(-1).toLongArray(), kernels.argMax(logits));
        }
    }
}
