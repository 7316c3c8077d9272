package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import java.util.List;
import org.junit.jupiter.api.Test;

class GradientClippingTest {

    @Test
    void gradientsAreScaledTogetherToTheGlobalNormLimit() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            double[] c1 = {3, -4};
            double[] c2 = {12};
            Parameter p1 = parameter(manager, "a", 2);
            Parameter p2 = parameter(manager, "b", 1);
            Parameter frozen = parameter(manager, "frozen", 1);
            frozen.freeze(true);
            try (GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
                // d/dw sum(w * c) = c, so the gradients are known: global norm sqrt(9 + 16 + 144) = 13.
                NDArray loss =
                        p1.getArray().mul(manager.create(c1)).sum().add(p2.getArray().mul(manager.create(c2)).sum());
                collector.backward(loss);
            }
            List<Parameter> all = List.of(p1, p2, frozen);
            // float64 holds these squares, their sum 169 and its square root exactly
            assertEquals(13.0, GradientClipping.clipGlobalNorm(all, 0, manager), 0.0, "0 only measures");
            assertArrayEquals(c1, p1.getArray().getGradient().toDoubleArray(), 0.0);

            double norm = GradientClipping.clipGlobalNorm(all, 6.5, manager);
            assertEquals(13.0, norm, 0.0);
            double scale = 6.5 / (13.0 + 1e-6);
            // each clipped gradient is one float64 product, rounded as the expected one is: an ulp
            double ulp = Math.ulp(12 * scale);
            assertArrayEquals(new double[] {3 * scale, -4 * scale}, p1.getArray().getGradient().toDoubleArray(), ulp);
            assertArrayEquals(new double[] {12 * scale}, p2.getArray().getGradient().toDoubleArray(), ulp);
            // the norm of the clipped gradients: three squares, two sums and a square root, off by a few ulps
            assertEquals(13.0 * scale, GradientClipping.clipGlobalNorm(all, 100, manager), 4 * Math.ulp(13.0),
                    "under the limit nothing changes");
        }
    }

    private static Parameter parameter(NDManager manager, String name, int size) {
        Parameter p = Parameter.builder().setName(name).setType(Parameter.Type.WEIGHT).build();
        NDArray array = manager.ones(new Shape(size), DataType.FLOAT64);
        p.setArray(array);
        array.setRequiresGradient(true);
        return p;
    }
}
