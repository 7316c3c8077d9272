package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

class Q4KBlockTest {

    /**
     * Each weight widens to the nearest of its sub-block's 16 levels {@code (d * sc) * q - dmin * m}
     * (so no code could be closer), a sub-block's levels span its values but for the 6-bit rounding of
     * its scale and min, and a row is whole super-blocks of 144 bytes, the last one padded.
     */
    @Test
    void eachWeightWidensToTheNearestLevelOfItsSubBlockAndRowsAreWholeSuperBlocks() {
        int out = 3;
        int in = 256 + 96; // one whole super-block, and three sub-blocks of the next
        // sub-blocks of other scales
        float[] w = RandomWeights.shaped(out, in, 5, (i, g) -> (float) (g * 0.02 * (1 + (i % in) / 64)));
        CompressedWeight c = CompressedWeight.compress(w, out, in, WeightFormat.Q4_K);
        assertEquals(out * 2 * Q4KBlock.BYTES, c.bytes(), "two super-blocks a row, scales inside");
        assertEquals(2 * Q4KBlock.BYTES, c.rowBytes());
        float[] back = c.toFloatArray();
        ByteBuffer codes = c.codes();
        for (int row = 0; row < out; row++) {
            for (int k = 0; k < in; k++) {
                int block = row * 2 + k / Q4KBlock.WEIGHTS;
                int at = block * Q4KBlock.BYTES;
                int sub = (k % Q4KBlock.WEIGHTS) / Q4KBlock.SUB;
                float step = HalfPrecision.float16ToFloat(codes.getShort(at)) * Q4KBlock.subScale(codes, at + 4, sub);
                float min = HalfPrecision.float16ToFloat(codes.getShort(at + 2)) * Q4KBlock.subMin(codes, at + 4, sub);
                float value = w[row * in + k];
                float nearest = Float.MAX_VALUE;
                for (int q = 0; q < 16; q++) {
                    nearest = Math.min(nearest, Math.abs(step * q - min - value));
                }
                float error = Math.abs(back[row * in + k] - value);
                // the code divides by the float32 step, which may round a tie the other way
                assertTrue(error <= nearest + Math.ulp(Math.abs(value) + step), "row " + row + " input " + k
                        + ": " + error + " from the weight, its nearest level " + nearest);
                // a level within half a step, or the value beyond the 16 levels by under a 6-bit step of the range
                assertTrue(error <= step / 2 + Math.ulp(step * 16) || value < -min || value > 15 * step - min,
                        "row " + row + " input " + k);
            }
        }
    }

    /** A row's super-blocks given as they are (a GGUF file's Q4_K tensor) widen as the compressed weight's. */
    @Test
    void superBlocksGivenAsTheyAreWidenAsTheyWereCompressed() {
        int out = 2;
        int in = 512;
        float[] w = RandomWeights.gaussian(out, in, 6);
        CompressedWeight c = CompressedWeight.compress(w, out, in, WeightFormat.Q4_K);
        ByteBuffer copy = ByteBuffer.allocateDirect(Math.toIntExact(c.bytes())).order(ByteOrder.nativeOrder());
        copy.put(c.codes());
        CompressedWeight given = CompressedWeight.ofCodes(WeightFormat.Q4_K, out, in, copy);
        assertArrayEquals(c.toFloatArray(), given.toFloatArray(), 0f);
    }

    /** llama.cpp's use_more_bits: the first and last eighth of the layers and every third between. */
    @Test
    void theQ4KMMixHoldsTheHeadAndTheChosenLayersValueAndDownProjectionsInInt6() {
        int layers = 24;
        assertEquals(WeightFormat.INT6, Q4KMix.formatOf("lm_head.weight", true, layers));
        assertEquals(WeightFormat.Q4_K, Q4KMix.formatOf("embed_tokens.weight", false, layers));
        int finer = 0;
        for (int layer = 0; layer < layers; layer++) {
            WeightFormat v = Q4KMix.formatOf("layers." + layer + ".self_attn.v_proj.weight", false, layers);
            assertEquals(v, Q4KMix.formatOf("layers." + layer + ".mlp.down_proj.weight", false, layers));
            assertEquals(WeightFormat.Q4_K, Q4KMix.formatOf("layers." + layer + ".self_attn.q_proj.weight", false, layers));
            boolean edge = layer < layers / 8 || layer >= layers - layers / 8;
            assertTrue(!edge || v == WeightFormat.INT6, "layer " + layer + " of the first or last eighth");
            finer += v == WeightFormat.INT6 ? 1 : 0;
        }
        // the 6 edge layers and every third of the 18 between
        assertEquals(layers / 4 + (layers - layers / 4) / 3, finer);
    }
}
