package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.github.djlllmzoo.blocks.config.RopeScaling;
import org.junit.jupiter.api.Test;

/** Llama 3.1's rope scaling is found again from the factors llama.cpp's converter stores. */
class GgufRopeFactorsTest {

    @Test
    void llama31sParametersComeBackFromItsFactors() {
        // Llama 3.1 8B: head 128, rope_theta 500000, factor 8, low 1, high 4, original context 8192
        float[] factors = GoldenGguf.llama3Factors(128, 500_000, 8, 1, 4, 8192);
        RopeScaling scaling = GgufRopeFactors.llama3(factors, 128, 500_000);
        assertEquals(RopeScaling.Type.LLAMA3, scaling.type());
        assertEquals(8, scaling.factor(), 1e-6);
        // the band's edges are fitted to float32 factors: to about their precision
        assertEquals(1, scaling.lowFreqFactor(), 1e-3);
        assertEquals(4, scaling.highFreqFactor(), 1e-3);
        assertEquals(8192, scaling.originalMaxPositionEmbeddings());
    }

    @Test
    void factorsOfOneAreNoScalingAndOthersAreRefused() {
        assertNull(GgufRopeFactors.llama3(new float[] {1, 1, 1, 1}, 8, 10_000));
        assertThrows(IllegalArgumentException.class,
                () -> GgufRopeFactors.llama3(new float[] {1, 3, 1, 8, 8, 2, 8, 8}, 16, 500_000));
        assertThrows(IllegalArgumentException.class, () -> GgufRopeFactors.llama3(new float[] {1, 8}, 8, 10_000));
    }
}
