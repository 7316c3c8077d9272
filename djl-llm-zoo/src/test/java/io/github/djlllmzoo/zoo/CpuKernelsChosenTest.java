package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.github.djlllmzoo.cpu.CpuKernels;
import org.junit.jupiter.api.Test;

/** The library's users get the CPU kernels: a checkpoint loaded on the CPU computes with them. */
class CpuKernelsChosenTest {

    @Test
    void aCheckpointLoadedOnTheCpuComputesWithTheCpuKernels() throws Exception {
        GoldenCase golden = GoldenCase.load("llama-gqa");
        try (LocalModel model = LocalModel.load(golden.dir())) {
            model.generator().scoreTokens(golden.promptIds());
            assertInstanceOf(CpuKernels.class, model.block().kernels());
            assertSame(model.block().kernels(), model.block().layers().get(0).kernels());
        }
    }
}
