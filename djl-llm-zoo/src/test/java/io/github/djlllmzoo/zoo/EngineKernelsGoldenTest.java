package io.github.djlllmzoo.zoo;

import io.github.djlllmzoo.blocks.EngineKernels;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every golden case reproduced with {@link EngineKernels}, what computes on a GPU, explicitly chosen
 * on the CPU: its prefill takes the fused products, its decode steps the fused products, the
 * layer-norm form of RMSNorm, the rotation matrices and the cache's split-and-copy write.
 */
class EngineKernelsGoldenTest {

    @ParameterizedTest
    @MethodSource("io.github.djlllmzoo.zoo.GoldenCasesTest#cases")
    void reproducesPromptLogprobsAndGreedyIdsWithTheEnginesOperations(String name) throws Exception {
        GoldenCasesTest.reproduces(name, EngineKernels.INSTANCE);
    }
}
