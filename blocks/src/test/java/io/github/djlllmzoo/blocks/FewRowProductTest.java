package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class FewRowProductTest extends ManagedArraysTest {

    @BeforeEach
    void kernelBuiltAndLoadedWhereTheCpuHasAvx512() throws Exception {
        assumeTrue(
                FewRowProduct.class.getResource("native/libllmzoo-few-row-product.so") != null,
                "kernel not built (no C compiler at build time)");
        String cpu = Files.readString(Paths.get("/proc/cpuinfo"));
        assumeTrue(cpu.contains(" avx512f "), "the CPU has no AVX-512F");
        assertTrue(FewRowProduct.available(), "built and the CPU has AVX-512F, yet the kernel did not load");
    }

    private NDArray engine(NDArray x, NDArray weight, NDArray bias) {
        return x.getNDArrayInternal().linear(x, weight, bias).singletonOrThrow();
    }

    @ParameterizedTest
    @CsvSource({
        "2, 768, 1000", "3, 768, 1000", "5, 100, 257", "7, 16, 33", "8, 768, 1000", "8, 100, 257", "8, 1, 3",
        "4, 15, 2"
    })
    void theKernelEqualsTheEnginesLinearForAnyWidthWithAndWithoutBias(int rows, int in, int out) {
        NDArray weight = manager.randomNormal(new Shape(out, in)); // (out, in)
        NDArray bias = manager.randomNormal(new Shape(out));
        NDArray x = manager.randomNormal(new Shape(rows, 1, in)); // a decode step: (B, 1, in)
        for (NDArray b : new NDArray[] {bias, null}) {
            assertTrue(FewRowProduct.applies(x, weight, b, rows));
            NDArray actual = FewRowProduct.output(x, weight, rows);
            FewRowProduct.multiply(x, weight, b, actual, 0, out);
            assertEquals(new Shape(rows, out), actual.getShape());
            float[] expected = engine(x, weight, b).toFloatArray();
            assertArrayEquals(expected, actual.toFloatArray(), 1e-4f * (float) Math.sqrt(in), "bias " + (b != null));
        }
    }

    @Test
    void columnRangesFilledSeparatelyMakeTheWholeProduct() {
        NDArray weight = manager.randomNormal(new Shape(301, 64));
        NDArray x = manager.randomNormal(new Shape(8, 64));
        NDArray out = FewRowProduct.output(x, weight, 8);
        out.set(new float[8 * 301]); // zeros: every column must be written over
        FewRowProduct.multiply(x, weight, null, out, 150, 301);
        FewRowProduct.multiply(x, weight, null, out, 0, 150);
        assertArrayEquals(engine(x, weight, null).toFloatArray(), out.toFloatArray(), 1e-3f);
    }

    @Test
    void viewsOtherTypesAndRowCountsOutsideTheRangeAreLeftToTheEngine() {
        NDArray weight = manager.randomNormal(new Shape(64, 32));
        NDArray x = manager.randomNormal(new Shape(8, 32));
        assertTrue(FewRowProduct.applies(x, weight, null, 8));
        // A transposed and a strided view read the storage in another order than their values.
        assertFalse(FewRowProduct.applies(manager.randomNormal(new Shape(32, 8)).transpose(), weight, null, 8));
        assertFalse(FewRowProduct.applies(x, manager.randomNormal(new Shape(64, 64)).get(":, ::2"), null, 8));
        assertFalse(FewRowProduct.applies(x, weight, manager.randomNormal(new Shape(128)).get("::2"), 8));
        assertFalse(FewRowProduct.applies(x.toType(DataType.FLOAT64, false), weight.toType(DataType.FLOAT64, false),
                null, 8));
        assertFalse(FewRowProduct.applies(x, weight, manager.randomNormal(new Shape(63)), 8), "bias of the wrong size");
        assertFalse(FewRowProduct.applies(x, manager.randomNormal(new Shape(64, 31)), null, 8), "widths differ");
        NDArray nine = manager.randomNormal(new Shape(9, 32));
        assertFalse(FewRowProduct.applies(nine, weight, null, 9));
        NDArray one = manager.randomNormal(new Shape(1, 32));
        assertEquals(FewRowProduct.MIN_ROWS <= 1, FewRowProduct.applies(one, weight, null, 1));
    }

    @Test
    void aStridedInputTakesTheEnginesPathThroughLinearAndGivesTheRightValues() {
        NDArray weight = manager.randomNormal(new Shape(1024, 256)); // over SplitProjection.MIN_ELEMENTS
        NDArray x = manager.randomNormal(new Shape(256, 8)).transpose(); // (8, 256), not contiguous
        NDArray actual = new SplitProjection().linear(x, weight, null, false);
        assertArrayEquals(engine(x, weight, null).toFloatArray(), actual.toFloatArray(), 1e-3f);
    }
}
