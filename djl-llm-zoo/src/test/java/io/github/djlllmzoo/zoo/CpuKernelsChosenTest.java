package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.github.djlllmzoo.cpu.CpuKernels;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The library's users get the CPU kernels: a checkpoint of every Llama-shaped family loaded on the
 * CPU computes with them.
 */
class CpuKernelsChosenTest {

    @ParameterizedTest
    @MethodSource("io.github.djlllmzoo.zoo.GoldenCase#llamaShaped")
    void aCheckpointLoadedOnTheCpuComputesWithTheCpuKernels(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        try (LocalModel model = LocalModel.load(golden.dir())) {
            model.generator().scoreTokens(golden.promptIds());
            assertInstanceOf(CpuKernels.class, model.block().kernels());
            assertSame(model.block().kernels(), model.block().layers().get(0).kernels());
        }
    }
}
