package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.WeightFormat;
import org.junit.jupiter.api.Test;

/**
 * The widening buffer (a float32 copy of the largest weight a prefill widens, 46 MB for TinyLlama's
 * MLP) is allocated only by a product that widens: an int8 model's prefill holds none where the CPU
 * has the instruction {@link CompressedGemm} multiplies int8 codes with.
 */
class WideningBufferAllocationTest extends CompressedWeightsTest {

    private static final int OUT = 96;
    private static final int IN = 64;

    private ProjectionWeight int8Weight() {
        ProjectionWeight weight = Projections.of(Layout.OUT_IN, manager.zeros(new Shape(OUT, IN), DataType.FLOAT32), null);
        weight.hold(compressed(OUT, IN, WeightFormat.INT8));
        return weight;
    }

    /** (B, T, in): a prefill's rows, more than a decode product takes. */
    private NDArray prefillRows() {
        return manager.randomNormal(new Shape(1, 33, IN));
    }

    @Test
    void anInt8PrefillHoldsNoWideningBufferWhereTheGemmTakesInt8() {
        assumeTrue(CompressedGemm.takes(WeightFormat.INT8), "this CPU widens int8 weights for a prefill");
        CpuKernels kernels = new CpuKernels();
        assertEquals(0, kernels.wideningBytes(), "before any product");
        NDArray y = kernels.project(prefillRows(), int8Weight(), null, false);
        assertEquals(new Shape(1, 33, OUT), y.getShape());
        assertEquals(0, kernels.wideningBytes(), "after an int8 prefill's product");
    }
}
