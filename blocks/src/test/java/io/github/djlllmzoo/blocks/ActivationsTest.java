package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import org.junit.jupiter.api.Test;

class ActivationsTest {

    /** float32's unit roundoff 2^-24: the relative error of one rounded operation. */
    private static final double UNIT_ROUNDOFF = Math.ulp(1f) / 2;

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
                double twoZ = 2 * Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x);
                double expected = 0.5 * x * (1 + Math.tanh(twoZ / 2));
                // float32 computes 2z = x (c1 x^2 + c2) with six roundings (two constants, four
                // operations, no cancellation), which sigmoid(2z) turns into a relative error of up
                // to |2z| times theirs; sigmoid and the product with x add a few more. The float64
                // reference's 1 + tanh(z) cancels for negative x to within an ulp of 1, which also
                // covers float32's underflow there.
                double tolerance =
                        (6 * Math.abs(twoZ) + 6) * UNIT_ROUNDOFF * Math.abs(expected) + Math.abs(x) * Math.ulp(1.0);
                assertEquals(expected, actual[i], tolerance, "x = " + x);
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
