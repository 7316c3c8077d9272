package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.RoundingBound;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CloseStepTest extends ManagedArraysTest {

    @Test
    void releasedStepsAreAllClosedSoonAfterWhileLaterStepsComputeCorrectly() throws InterruptedException {
        NDArray weight = manager.randomNormal(new Shape(1000, 384)); // large enough to be split
        NDManager parent = manager.newSubManager();
        SplitProjection split = new SplitProjection(true, true);
        CpuKernels kernels = new CpuKernels();
        List<NDManager> steps = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            NDManager step = parent.newSubManager();
            NDArray x = step.randomNormal(new Shape(1, 1, 384));
            NDArray y = split.linear(x, weight, null, false);
            for (int j = 0; j < 50; j++) {
                y = y.mul(1.0f).reshape(1, 1, 1000); // arrays for the worker to free
            }
            float[] expected = x.getNDArrayInternal().linear(x, weight, null).singletonOrThrow().toFloatArray();
            assertArrayEquals(expected, y.toFloatArray(), RoundingBound.ofProduct(x, weight, null, true), "step " + i);
            kernels.closeStep(step);
            steps.add(step);
        }
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!parent.getManagedArrays().isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, parent.getManagedArrays().size(), "arrays of released steps still open");
        for (NDManager step : steps) {
            assertFalse(step.isOpen(), "a released step's manager is closed");
        }
        parent.close();
    }
}
