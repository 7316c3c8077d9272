package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import org.junit.jupiter.api.Test;

class ActivationsTest {

    @Test
    void geluNewMatchesGpt2sTanhFormulaAcrossTheRange() {
        float[] xs = new float[401];
        for (int i = 0; i < xs.length; i++) {
            xs[i] = -20f + i * 0.1f;
        }
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            float[] actual = Activations.geluNew(manager.create(xs)).toFloatArray();
            for (int i = 0; i < xs.length; i++) {
                double x = xs[i];
                double expected = 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
                assertEquals(expected, actual[i], 1e-6 + 1e-6 * Math.abs(expected), "x = " + x);
            }
        }
    }

    @Test
    void geluNewKeepsTheInputsShapeAndManager() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
                NDManager scope = manager.newSubManager()) {
            NDArray x = scope.ones(new ai.djl.ndarray.types.Shape(2, 3, 4));
            NDArray y = Activations.geluNew(x);
            assertEquals(x.getShape(), y.getShape());
            assertEquals(scope, y.getManager());
        }
    }
}
