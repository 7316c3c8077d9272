package io.github.djlllmzoo.blocks;

import java.nio.ByteBuffer;
import java.util.Random;

/**
 * The weights the compressed formats' tests compress ({@link CompressedWeightTest}, {@link
 * Q4KBlockTest}): an {@code (out, in)} matrix of Gaussian draws from a test's own seed, each drawn
 * value shaped by the test (a scale per group, say), and the float16 scales a format stores per group.
 */
final class RandomWeights {

    /** What a test makes of element {@code i}'s Gaussian draw. */
    @FunctionalInterface
    interface Shaping {
        /**
         * @param i the element, row-major
         * @param gaussian its draw
         * @return the weight
         */
        float weight(int i, double gaussian);
    }

    private RandomWeights() {}

    /**
     * @param out the rows
     * @param in the inputs a row
     * @param seed the draws' seed
     * @return {@code out * in} standard Gaussian weights, row-major
     */
    static float[] gaussian(int out, int in, long seed) {
        return shaped(out, in, seed, (i, gaussian) -> (float) gaussian);
    }

    /**
     * @param out the rows
     * @param in the inputs a row
     * @param seed the draws' seed
     * @param shaping what each element's draw becomes
     * @return {@code out * in} weights, row-major, drawn in order
     */
    static float[] shaped(int out, int in, long seed, Shaping shaping) {
        float[] w = new float[out * in];
        Random random = new Random(seed);
        for (int i = 0; i < w.length; i++) {
            w[i] = shaping.weight(i, random.nextGaussian());
        }
        return w;
    }

    /**
     * @param scales a compressed weight's float16 scales, one a group, row-major
     * @param group the group, counted over all rows
     * @return its scale
     */
    static float groupScale(ByteBuffer scales, int group) {
        return HalfPrecision.float16ToFloat(scales.getShort(Short.BYTES * group));
    }
}
