package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ShortBuffer;
import java.util.Random;

class HalfPrecisionTest {

    private static NDManager manager;

    @BeforeAll
    static void createManager() {
        manager = NDManager.newBaseManager("PyTorch");
    }

    @AfterAll
    static void closeManager() {
        manager.close();
    }

    private static void assertSameFloat(float expected, float actual, String context) {
        if (Float.isNaN(expected)) {
            assertTrue(Float.isNaN(actual), context + ": expected NaN but was " + actual);
        } else {
            assertEquals(
                    Float.floatToRawIntBits(expected),
                    Float.floatToRawIntBits(actual),
                    context + ": expected " + expected + " but was " + actual);
        }
    }

    /** Reference values computed with numpy's float16. */
    @Test
    void float16WideningMatchesReferenceValuesIncludingSubnormalsInfinitiesNanAndNegativeZero() {
        int[][] cases = {
            {0x0000, Float.floatToRawIntBits(0.0f)},
            {0x8000, Float.floatToRawIntBits(-0.0f)},
            {0x0001, Float.floatToRawIntBits(0x1p-24f)},
            {0x8001, Float.floatToRawIntBits(-0x1p-24f)},
            {0x03FF, Float.floatToRawIntBits(0x1.ff8p-15f)},
            {0x0400, Float.floatToRawIntBits(0x1p-14f)},
            {0x81C1, Float.floatToRawIntBits(-0x1.c1p-16f)},
            {0x3C00, Float.floatToRawIntBits(1.0f)},
            {0x3C01, Float.floatToRawIntBits(1.0009765625f)},
            {0xC000, Float.floatToRawIntBits(-2.0f)},
            {0x3555, Float.floatToRawIntBits(0.333251953125f)},
            {0x7BFF, Float.floatToRawIntBits(65504.0f)},
            {0x7C00, Float.floatToRawIntBits(Float.POSITIVE_INFINITY)},
            {0xFC00, Float.floatToRawIntBits(Float.NEGATIVE_INFINITY)},
        };
        for (int[] c : cases) {
            assertSameFloat(
                    Float.intBitsToFloat(c[1]),
                    HalfPrecision.float16ToFloat((short) c[0]),
                    Integer.toHexString(c[0]));
        }
        assertTrue(Float.isNaN(HalfPrecision.float16ToFloat((short) 0x7E00)));
        assertTrue(Float.isNaN(HalfPrecision.float16ToFloat((short) 0x7C01)));
        assertTrue(Float.isNaN(HalfPrecision.float16ToFloat((short) 0xFE00)));
    }

    /** Reference values computed with numpy's float32 to float16 cast. */
    @Test
    void float16NarrowingRoundsToNearestEvenLikeTheReference() {
        float[] inputs = {
            1.0f,
            65504.0f,
            65520.0f,
            Math.nextDown(65520.0f),
            0x1p-24f,
            0x1p-25f,
            Math.nextUp(0x1p-25f),
            0x1.8p-24f,
            0x1.4p-23f,
            1.0f + 0x1p-11f,
            1.0f + 0x1.8p-10f,
            -0.0f,
            1e-10f,
            0x1.ffcp-15f,
            0x1.ff9p-15f,
            Float.POSITIVE_INFINITY,
            Float.NEGATIVE_INFINITY,
            1e6f,
        };
        int[] expected = {
            0x3C00, 0x7BFF, 0x7C00, 0x7BFF, 0x0001, 0x0000, 0x0001, 0x0002, 0x0002, 0x3C00, 0x3C02,
            0x8000, 0x0000, 0x0400, 0x03FF, 0x7C00, 0xFC00, 0x7C00,
        };
        for (int i = 0; i < inputs.length; i++) {
            assertEquals(
                    expected[i],
                    HalfPrecision.floatToFloat16(inputs[i]) & 0xFFFF,
                    "input " + Float.toHexString(inputs[i]));
        }
        short nan = HalfPrecision.floatToFloat16(Float.NaN);
        assertTrue(Float.isNaN(HalfPrecision.float16ToFloat(nan)));
    }

    @Test
    void bfloat16ConversionsMatchReferenceValuesIncludingSubnormalsInfinitiesNanAndNegativeZero() {
        int[][] widening = {
            {0x3F80, Float.floatToRawIntBits(1.0f)},
            {0x0001, Float.floatToRawIntBits(0x1p-133f)},
            {0x8001, Float.floatToRawIntBits(-0x1p-133f)},
            {0x0080, Float.floatToRawIntBits(0x1p-126f)},
            {0x8000, Float.floatToRawIntBits(-0.0f)},
            {0x7F7F, Float.floatToRawIntBits(0x1.fep127f)},
            {0x7F80, Float.floatToRawIntBits(Float.POSITIVE_INFINITY)},
            {0xFF80, Float.floatToRawIntBits(Float.NEGATIVE_INFINITY)},
            {0x3EAB, Float.floatToRawIntBits(0.333984375f)},
            {0x3EBA, Float.floatToRawIntBits(0.36328125f)},
        };
        for (int[] c : widening) {
            assertSameFloat(
                    Float.intBitsToFloat(c[1]),
                    HalfPrecision.bfloat16ToFloat((short) c[0]),
                    Integer.toHexString(c[0]));
        }
        assertTrue(Float.isNaN(HalfPrecision.bfloat16ToFloat((short) 0x7FC0)));
        assertTrue(Float.isNaN(HalfPrecision.bfloat16ToFloat((short) 0xFF81)));

        float[] inputs = {
            1.0f,
            1.0f + 0x1p-8f,
            1.0f + 0x1.8p-7f,
            1.0f / 3,
            Float.MAX_VALUE,
            -0.0f,
            0x1p-133f,
            Float.MIN_VALUE,
            Float.NEGATIVE_INFINITY,
        };
        int[] expected = {0x3F80, 0x3F80, 0x3F82, 0x3EAB, 0x7F80, 0x8000, 0x0001, 0x0000, 0xFF80};
        for (int i = 0; i < inputs.length; i++) {
            assertEquals(
                    expected[i],
                    HalfPrecision.floatToBfloat16(inputs[i]) & 0xFFFF,
                    "input " + Float.toHexString(inputs[i]));
        }
        // A NaN whose payload sits only in the low 16 bits must not truncate to infinity.
        short nan = HalfPrecision.floatToBfloat16(Float.intBitsToFloat(0x7F800001));
        assertTrue(Float.isNaN(HalfPrecision.bfloat16ToFloat(nan)));
    }

    @Test
    void everyNonNanPatternSurvivesWideningThenNarrowing() {
        for (int bits = 0; bits <= 0xFFFF; bits++) {
            String hex = Integer.toHexString(bits);
            float half = HalfPrecision.float16ToFloat((short) bits);
            if (Float.isNaN(half)) {
                assertTrue(
                        Float.isNaN(
                                HalfPrecision.float16ToFloat(HalfPrecision.floatToFloat16(half))));
            } else {
                assertEquals(bits, HalfPrecision.floatToFloat16(half) & 0xFFFF, "F16 " + hex);
            }
            float brain = HalfPrecision.bfloat16ToFloat((short) bits);
            short back = HalfPrecision.floatToBfloat16(brain);
            if (Float.isNaN(brain)) {
                assertTrue(Float.isNaN(HalfPrecision.bfloat16ToFloat(back)), "BF16 " + hex);
            } else {
                assertEquals(bits, back & 0xFFFF, "BF16 " + hex);
            }
        }
    }

    @Test
    void float16WideningAgreesWithPyTorchOnAllBitPatterns() {
        ByteBuffer bytes = manager.allocateDirect(2 * 65536);
        ShortBuffer shorts = bytes.asShortBuffer();
        for (int bits = 0; bits <= 0xFFFF; bits++) {
            shorts.put(bits, (short) bits);
        }
        float[] engine;
        try (NDArray half = manager.create(bytes, new Shape(65536), DataType.FLOAT16);
                NDArray wide = half.toType(DataType.FLOAT32, true)) {
            engine = wide.toFloatArray();
        }
        for (int bits = 0; bits <= 0xFFFF; bits++) {
            assertSameFloat(
                    engine[bits],
                    HalfPrecision.float16ToFloat((short) bits),
                    Integer.toHexString(bits));
        }
    }

    @Test
    void float16NarrowingAgreesWithPyTorchOnRandomFloatsAndHalfwayPoints() {
        Random random = new Random(42);
        int n = 200_000;
        float[] inputs = new float[n];
        for (int i = 0; i < n; i++) {
            // Exponents spanning underflow, subnormal, normal and overflow ranges of binary16.
            int exponent = 127 - 30 + random.nextInt(50);
            int bits = (random.nextInt(2) << 31) | (exponent << 23) | random.nextInt(1 << 23);
            if (i % 4 == 0) {
                bits &= ~0xFFF; // Make exact ties between two binary16 values likely.
            }
            inputs[i] = Float.intBitsToFloat(bits);
        }
        short[] engine;
        try (NDArray single = manager.create(inputs);
                NDArray half = single.toType(DataType.FLOAT16, true)) {
            ByteBuffer out = half.toByteBuffer();
            engine = new short[n];
            out.asShortBuffer().get(engine);
        }
        for (int i = 0; i < n; i++) {
            assertEquals(
                    engine[i] & 0xFFFF,
                    HalfPrecision.floatToFloat16(inputs[i]) & 0xFFFF,
                    "input " + Float.toHexString(inputs[i]));
        }
    }
}
