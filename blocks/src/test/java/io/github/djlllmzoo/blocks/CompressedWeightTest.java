package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

class CompressedWeightTest {

    @Test
    void int8CodesAreWithinHalfAFloat16ScaleOfTheWeightPerGroupOfThirtyTwoInputs() {
        int out = 3;
        int in = 70; // two whole groups and one of 6
        float[] w = RandomWeights.shaped(out, in, 3, (i, g) -> (float) g * (1 + i / 32)); // each group of another scale
        CompressedWeight c = CompressedWeight.compress(w, out, in, WeightFormat.INT8);
        assertEquals(out * in + out * 3 * Short.BYTES, c.bytes(), "one byte a weight, one float16 a group");
        ByteBuffer scales = c.directBuffers()[1];
        float[] back = c.toFloatArray();
        for (int row = 0; row < out; row++) {
            for (int group = 0; group < 3; group++) {
                float scale = RandomWeights.groupScale(scales, row * 3 + group);
                float largest = 0;
                for (int k = group * 32; k < Math.min(in, group * 32 + 32); k++) {
                    int i = row * in + k;
                    largest = Math.max(largest, Math.abs(w[i]));
                    // half a scale of rounding (the codes divide by the rounded scale), and the float32
                    // rounding of code * scale
                    assertEquals(w[i], back[i], scale / 2 + Math.ulp(Math.abs(w[i]) + scale), "element " + i);
                }
                assertEquals(HalfPrecision.float16ToFloat(HalfPrecision.floatToFloat16(largest / 127f)), scale,
                        "scale of group " + group + " of row " + row);
            }
        }
        byte[] codes = new byte[out * in];
        c.codes().get(codes);
        int extremes = 0;
        for (byte b : codes) {
            assertTrue(b >= -127, "codes are symmetric");
            extremes += Math.abs(b) == 127 ? 1 : 0;
        }
        assertTrue(extremes >= out * 3, "each group's largest weight is +-127");
    }

    @Test
    void int4PacksQ4_0BlocksWithinHalfAScaleOfTheWeightAndPadsAShortGroup() {
        int out = 2;
        int in = 40; // one whole group and one of 8
        float[] w = RandomWeights.gaussian(out, in, 4);
        CompressedWeight c = CompressedWeight.compress(w, out, in, WeightFormat.INT4);
        assertEquals(out * 2 * (16 + Short.BYTES), c.bytes(), "16 bytes of codes and a float16 a group");
        assertEquals(2 * (16 + Short.BYTES), c.rowBytes());
        ByteBuffer codes = c.directBuffers()[0];
        ByteBuffer scales = c.directBuffers()[1];
        float[] back = c.toFloatArray();
        for (int row = 0; row < out; row++) {
            for (int group = 0; group < 2; group++) {
                float scale = RandomWeights.groupScale(scales, row * 2 + group);
                float extreme = 0;
                for (int k = group * 32; k < Math.min(in, group * 32 + 32); k++) {
                    extreme = Math.abs(w[row * in + k]) > Math.abs(extreme) ? w[row * in + k] : extreme;
                }
                // as llama.cpp's Q4_0: the extreme value is code 0, i.e. -8 scales
                assertEquals(HalfPrecision.float16ToFloat(HalfPrecision.floatToFloat16(extreme / -8f)), scale);
                for (int k = group * 32; k < Math.min(in, group * 32 + 32); k++) {
                    int i = row * in + k;
                    // the grid reaches 7 scales on the extreme's other side: beyond, one scale
                    float bound = Math.abs(w[i]) <= 7 * Math.abs(scale) ? Math.abs(scale) / 2 : Math.abs(scale);
                    assertEquals(w[i], back[i], bound + Math.ulp(Math.abs(w[i]) + Math.abs(scale)), "element " + i);
                    int j = k - group * 32;
                    int b = codes.get((row * 2 + group) * 16 + j % 16) & 0xFF;
                    assertEquals(back[i], ((j < 16 ? b & 0xF : b >> 4) - 8) * scale, "Q4_0's packing, element " + i);
                }
            }
            // the short group's 8 values are low nibbles of bytes 0-7; the other 24 codes are 8, i.e. zero
            for (int j = 0; j < 16; j++) {
                int b = codes.get((row * 2 + 1) * 16 + j) & 0xFF;
                assertEquals(8, b >> 4, "padding in the high nibble of byte " + j);
                if (j >= 8) {
                    assertEquals(8, b & 0xF, "padding in the low nibble of byte " + j);
                }
            }
        }
    }

    /**
     * int6's packing, decoded independently of {@code CompressedWeight}: each code is the weight
     * rounded to the group's stored scale (within half a scale, or clamped to [-32, 31]), and a short
     * group is padded with code 0.
     */
    @Test
    void int6PacksGroupsOf24BytesWithinHalfAScaleOfTheWeightAndPadsAShortGroup() {
        int out = 2;
        int in = 40; // one whole group and one of 8
        float[] w = RandomWeights.gaussian(out, in, 6);
        CompressedWeight c = CompressedWeight.compress(w, out, in, WeightFormat.INT6);
        assertEquals(out * 2 * (24 + Short.BYTES), c.bytes(), "24 bytes of codes and a float16 a group: 6.5 bits");
        ByteBuffer codes = c.directBuffers()[0];
        ByteBuffer scales = c.directBuffers()[1];
        float[] back = c.toFloatArray();
        for (int row = 0; row < out; row++) {
            for (int group = 0; group < 2; group++) {
                int at = (row * 2 + group) * 24;
                float scale = RandomWeights.groupScale(scales, row * 2 + group);
                for (int j = 0; j < 32; j++) {
                    int b = codes.get(at + j % 16) & 0xFF;
                    int u = (j < 16 ? b & 0xF : b >> 4) | ((codes.get(at + 16 + j % 8) >> (2 * (j / 8))) & 3) << 4;
                    int k = group * 32 + j;
                    if (k >= in) {
                        assertEquals(32, u, "padding is code 0, element " + j + " of the short group");
                        continue;
                    }
                    int i = row * in + k;
                    int nearest = Math.round(w[i] / scale);
                    assertEquals(Math.max(-32, Math.min(31, nearest)), u - 32, "element " + i + "'s code");
                    assertEquals(back[i], (u - 32) * scale, "the documented packing, element " + i);
                }
            }
        }
    }

    /**
     * int6's scale is fitted as llama.cpp fits Q6_K's (candidate grids around {@code extreme / -32},
     * each with its least-squares scale, weighted by {@code x^2}): over many groups its weighted
     * squared error is less than the plain grid's (the extreme value at code -32), each rounded to
     * its float16 scale.
     */
    @Test
    void int6sFittedScalesLeaveLessWeightedErrorThanTheExtremesGrid() {
        int out = 64;
        int in = 256;
        float[] w = RandomWeights.gaussian(out, in, 66);
        float[] back = CompressedWeight.compress(w, out, in, WeightFormat.INT6).toFloatArray();
        double fitted = 0;
        double plain = 0;
        for (int g = 0; g < w.length; g += 32) {
            float extreme = 0;
            for (int i = g; i < g + 32; i++) {
                extreme = Math.abs(w[i]) > Math.abs(extreme) ? w[i] : extreme;
            }
            float scale = HalfPrecision.float16ToFloat(HalfPrecision.floatToFloat16(extreme / -32f));
            for (int i = g; i < g + 32; i++) {
                double weight = (double) w[i] * w[i];
                double grid = Math.max(-32, Math.min(31, Math.round(w[i] / scale))) * scale;
                plain += weight * (w[i] - grid) * (w[i] - grid);
                fitted += weight * (w[i] - back[i]) * (w[i] - back[i]);
            }
        }
        assertTrue(fitted < plain, "fitted " + fitted + " against the plain grid's " + plain);
    }

    @Test
    void int8RefusesAGroupWhoseScaleIsBeyondFloat16AndKeepsOneWithinIt() {
        float largest = 65504f * 127; // the largest weight whose scale is float16's largest
        float[] within = new float[32];
        within[0] = largest;
        within[1] = -32.25f * 65504f;
        float[] back = CompressedWeight.compress(within, 1, 32, WeightFormat.INT8).toFloatArray();
        assertEquals(largest, back[0]);
        assertEquals(-32 * 65504f, back[1], "rounded to the grid of the largest scale");
        float[] beyond = {Math.nextUp(largest * (1 + 0x1p-11f))};
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CompressedWeight.compress(beyond, 1, 1, WeightFormat.INT8));
        assertTrue(e.getMessage().contains("float16"), e.getMessage());
    }

    @Test
    void sixteenBitWeightsWidenToTheirRoundedValuesAndFloat32IsNoCompression() {
        float[] w = {1f, -2.5f, 3.14159f, 1e-3f, 0f, -7e4f};
        float[] b = CompressedWeight.compress(w, 2, 3, WeightFormat.BFLOAT16).toFloatArray();
        float[] h = CompressedWeight.compress(w, 2, 3, WeightFormat.FLOAT16).toFloatArray();
        for (int i = 0; i < w.length; i++) {
            assertEquals(HalfPrecision.bfloat16ToFloat(HalfPrecision.floatToBfloat16(w[i])), b[i]);
            assertEquals(HalfPrecision.float16ToFloat(HalfPrecision.floatToFloat16(w[i])), h[i]);
        }
        assertEquals(Float.NEGATIVE_INFINITY, h[5], "past float16's range");
        assertArrayEquals(new float[] {1f, -2.5f, 0f}, new float[] {b[0], b[1], b[4]});
        assertThrows(IllegalArgumentException.class, () -> CompressedWeight.compress(w, 2, 3, WeightFormat.FLOAT32));
        assertThrows(IllegalArgumentException.class, () -> CompressedWeight.compress(w, 2, 4, WeightFormat.INT8));
    }

    @Test
    void dtypeNamesParseToTheirFormatAndOthersAreRefusedByValue() {
        for (WeightFormat f : WeightFormat.values()) {
            assertEquals(f, WeightFormat.parse(f.dtypeName().toUpperCase()));
        }
        assertEquals(WeightFormat.INT8, WeightFormat.parse("q8_0"));
        assertEquals(WeightFormat.INT4, WeightFormat.parse("q4_0"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> WeightFormat.parse("int3"));
        assertTrue(e.getMessage().contains("'int3'"), e.getMessage());
    }
}
