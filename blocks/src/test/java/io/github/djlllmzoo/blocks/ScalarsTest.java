package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.Test;

class ScalarsTest {

    @Test
    void aScalarIsMadeOncePerValueDeviceAndTypeAndOutlivesTheCallersManager() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            NDArray first;
            try (NDManager step = manager.newSubManager()) {
                first = Scalars.of(0.125, step.ones(new Shape(3)));
            }
            try (NDManager step = manager.newSubManager()) {
                NDArray x = step.ones(new Shape(3));
                assertSame(first, Scalars.of(0.125, x));
                assertEquals(0.125f, first.getFloat());
                assertEquals(new Shape(), first.getShape());
                assertNotSame(first, Scalars.of(0.25, x));
                assertArrayEquals(new float[] {0.125f, 0.125f, 0.125f}, x.mul(first).toFloatArray());
            }
        }
    }

    @Test
    void aScalarTakesTheElementTypeOfTheArrayItCombinesWith() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            NDArray half = manager.ones(new Shape(2)).toType(DataType.FLOAT16, false);
            NDArray scalar = Scalars.of(3.0, half);
            assertEquals(DataType.FLOAT16, scalar.getDataType());
            assertEquals(DataType.FLOAT16, half.mul(scalar).getDataType());
            NDArray wide = manager.ones(new Shape(2)).toType(DataType.FLOAT64, false);
            assertEquals(0.1, Scalars.of(0.1, wide).getDouble(), 0.0);
        }
    }

    private static void assertArrayEquals(float[] expected, float[] actual) {
        org.junit.jupiter.api.Assertions.assertArrayEquals(expected, actual, 0f);
    }
}
