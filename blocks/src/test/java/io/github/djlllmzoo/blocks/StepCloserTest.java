package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import org.junit.jupiter.api.Test;

/** A finished decode step's arrays are freed: at once on the CPU, by the closing thread elsewhere. */
class StepCloserTest {

    @Test
    void aCpuStepIsClosedBeforeTheCallReturns() {
        try (NDManager model = NDManager.newBaseManager()) {
            NDManager step = model.newSubManager();
            NDArray made = step.ones(new ai.djl.ndarray.types.Shape(4));
            StepCloser.close(step);
            assertTrue(made.isReleased());
        }
    }

    @Test
    void aStepHandedToTheClosingThreadIsClosedByIt() throws InterruptedException {
        try (NDManager model = NDManager.newBaseManager()) {
            NDArray kept = model.ones(new ai.djl.ndarray.types.Shape(4));
            NDManager[] steps = new NDManager[8];
            NDArray[] made = new NDArray[steps.length];
            for (int i = 0; i < steps.length; i++) {
                steps[i] = model.newSubManager();
                made[i] = steps[i].ones(new ai.djl.ndarray.types.Shape(4));
                StepCloser.closeLater(steps[i]);
            }
            long deadline = System.nanoTime() + 10_000_000_000L;
            for (NDArray array : made) {
                while (!array.isReleased() && System.nanoTime() < deadline) {
                    Thread.sleep(1);
                }
                assertTrue(array.isReleased(), "every handed step is closed, by the thread or by its caller");
            }
            assertFalse(kept.isReleased(), "the model's own arrays stay");
        }
    }
}
