package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.RoundingBound;
import java.util.function.IntFunction;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

class FewRowProductTest extends ManagedArraysTest {

    @BeforeEach
    void kernelBuiltAndLoadedWhereTheCpuHasAvx512() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    private NDArray engine(NDArray x, NDArray weight, NDArray bias) {
        return x.getNDArrayInternal().linear(x, weight, bias).singletonOrThrow();
    }

    /** A random weight stored as {@code layout} says. */
    private NDArray weight(Layout layout, int in, int out) {
        return manager.randomNormal(layout == Layout.OUT_IN ? new Shape(out, in) : new Shape(in, out));
    }

    /** The engine's product for a weight stored as {@code layout} says. */
    private NDArray engine(NDArray x, NDArray weight, NDArray bias, Layout layout) {
        if (layout == Layout.OUT_IN) {
            return engine(x, weight, bias);
        }
        NDArray product = x.matMul(weight);
        return bias == null ? product : product.add(bias);
    }

    @ParameterizedTest
    @CsvSource({
        "OUT_IN, 1, 768, 1000", "OUT_IN, 1, 100, 257", "OUT_IN, 2, 768, 1000", "OUT_IN, 3, 768, 1000", "OUT_IN, 5, 100, 257", "OUT_IN, 7, 16, 33",
        "OUT_IN, 8, 768, 1000", "OUT_IN, 8, 100, 257", "OUT_IN, 8, 1, 3", "OUT_IN, 4, 15, 2",
        "IN_OUT, 2, 768, 1000", "IN_OUT, 3, 768, 1000", "IN_OUT, 5, 100, 257", "IN_OUT, 7, 16, 33",
        "IN_OUT, 8, 768, 2304", "IN_OUT, 8, 3072, 768", "IN_OUT, 8, 100, 257", "IN_OUT, 8, 1, 3",
        "IN_OUT, 4, 15, 2", "IN_OUT, 6, 13, 17"
    })
    void theKernelEqualsTheEnginesProductForAnyWidthWithAndWithoutBias(Layout layout, int rows, int in, int out) {
        NDArray weight = weight(layout, in, out);
        NDArray bias = manager.randomNormal(new Shape(out));
        NDArray x = manager.randomNormal(new Shape(rows, 1, in)); // a decode step: (B, 1, in)
        for (NDArray b : new NDArray[] {bias, null}) {
            assertTrue(FewRowProduct.applies(x, weight, b, rows, layout));
            NDArray actual = FewRowProduct.output(x, weight, layout);
            FewRowProduct.multiply(x, weight, b, actual, 0, out, layout);
            assertEquals(new Shape(rows, 1, out), actual.getShape());
            float[] expected = engine(x, weight, b, layout).toFloatArray();
            assertArrayEquals(expected, actual.toFloatArray(),
                    RoundingBound.ofProduct(x, weight, b, layout == Layout.OUT_IN), "bias " + (b != null));
        }
    }

    @ParameterizedTest
    @EnumSource(Layout.class)
    void columnRangesFilledSeparatelyMakeTheWholeProduct(Layout layout) {
        NDArray weight = weight(layout, 64, 301);
        NDArray bias = manager.randomNormal(new Shape(301));
        NDArray x = manager.randomNormal(new Shape(8, 64));
        NDArray out = FewRowProduct.output(x, weight, layout);
        out.set(new float[8 * 301]); // zeros: every column must be written over
        FewRowProduct.multiply(x, weight, bias, out, 150, 301, layout);
        FewRowProduct.multiply(x, weight, bias, out, 0, 150, layout);
        assertArrayEquals(engine(x, weight, bias, layout).toFloatArray(), out.toFloatArray(),
                RoundingBound.ofProduct(x, weight, bias, layout == Layout.OUT_IN));
    }

    @Test
    void aColumnRangeLeavesTheOtherColumnsAsTheyWere() {
        NDArray weight = weight(Layout.IN_OUT, 40, 100);
        NDArray x = manager.randomNormal(new Shape(3, 40));
        NDArray out = FewRowProduct.output(x, weight, Layout.IN_OUT);
        out.set(new float[3 * 100]);
        FewRowProduct.multiply(x, weight, null, out, 20, 37, Layout.IN_OUT);
        NDArray expected = engine(x, weight, null, Layout.IN_OUT);
        assertArrayEquals(expected.get(":, 20:37").toFloatArray(), out.get(":, 20:37").toFloatArray(),
                RoundingBound.ofProduct(x, weight, null, false));
        assertEquals(0f, out.get(":, :20").abs().sum().getFloat(), "columns before the range");
        assertEquals(0f, out.get(":, 37:").abs().sum().getFloat(), "columns after the range");
    }

    @Test
    void viewsOtherTypesAndRowCountsOutsideTheRangeAreLeftToTheEngine() {
        NDArray weight = manager.randomNormal(new Shape(64, 32));
        NDArray x = manager.randomNormal(new Shape(8, 32));
        assertTrue(FewRowProduct.applies(x, weight, null, 8, Layout.OUT_IN));
        // A transposed and a strided view read the storage in another order than their values.
        NDArray transposed = manager.randomNormal(new Shape(32, 8)).transpose();
        assertFalse(FewRowProduct.applies(transposed, weight, null, 8, Layout.OUT_IN));
        NDArray strided = manager.randomNormal(new Shape(64, 64)).get(":, ::2");
        assertFalse(FewRowProduct.applies(x, strided, null, 8, Layout.OUT_IN));
        NDArray stridedBias = manager.randomNormal(new Shape(128)).get("::2");
        assertFalse(FewRowProduct.applies(x, weight, stridedBias, 8, Layout.OUT_IN));
        assertFalse(FewRowProduct.applies(x.toType(DataType.FLOAT64, false), weight.toType(DataType.FLOAT64, false),
                null, 8, Layout.OUT_IN));
        NDArray wrongBias = manager.randomNormal(new Shape(63));
        assertFalse(FewRowProduct.applies(x, weight, wrongBias, 8, Layout.OUT_IN), "bias of the wrong size");
        assertFalse(FewRowProduct.applies(x, manager.randomNormal(new Shape(64, 31)), null, 8, Layout.OUT_IN),
                "widths differ");
        NDArray nine = manager.randomNormal(new Shape(9, 32));
        assertFalse(FewRowProduct.applies(nine, weight, null, 9, Layout.OUT_IN));
        NDArray one = manager.randomNormal(new Shape(1, 32));
        assertEquals(FewRowProduct.minRows(Layout.OUT_IN) <= 1, FewRowProduct.applies(one, weight, null, 1, Layout.OUT_IN));
        // The same weight read as (in, out) takes inputs of width 64 and a bias of 32.
        assertFalse(FewRowProduct.applies(x, weight, null, 8, Layout.IN_OUT), "widths differ");
        NDArray wide = manager.randomNormal(new Shape(8, 64));
        assertTrue(FewRowProduct.applies(wide, weight, manager.randomNormal(new Shape(32)), 8, Layout.IN_OUT));
        assertFalse(FewRowProduct.applies(wide, weight, manager.randomNormal(new Shape(64)), 8, Layout.IN_OUT),
                "bias of the wrong size");
        assertFalse(FewRowProduct.applies(wide, manager.randomNormal(new Shape(32, 64)).transpose(), null, 8,
                Layout.IN_OUT), "a transposed weight");
    }

    @Test
    void byDefaultOneRowTakesTheKernelForAnOutInWeightAndTheByRowsProductForAnInOutWeight() {
        assumeTrue(System.getProperty("llmzoo.fewRowProduct.minRows") == null, "minRows set on the command line");
        assumeTrue(KernelSwitches.on(FewRowProduct.BY_ROWS_SWITCH), "byRows turned off on the command line");
        NDArray weight = manager.randomNormal(new Shape(64, 32));
        assertTrue(FewRowProduct.applies(manager.randomNormal(new Shape(1, 32)), weight, null, 1, Layout.OUT_IN));
        assertFalse(FewRowProduct.applies(manager.randomNormal(new Shape(1, 64)), weight, null, 1, Layout.IN_OUT));
        assertTrue(FewRowProduct.appliesByRows(manager.randomNormal(new Shape(1, 64)), weight, null, 1));
        assertTrue(FewRowProduct.applies(manager.randomNormal(new Shape(2, 64)), weight, null, 2, Layout.IN_OUT));
        assertFalse(FewRowProduct.appliesByRows(manager.randomNormal(new Shape(2, 64)), weight, null, 2), "two rows");
        assertFalse(FewRowProduct.appliesByRows(manager.randomNormal(new Shape(1, 32)), weight, null, 1), "widths differ");
        assertFalse(FewRowProduct.appliesByRows(manager.randomNormal(new Shape(1, 64)), weight,
                manager.randomNormal(new Shape(64)), 1), "bias of the wrong size");
        assertFalse(FewRowProduct.appliesByRows(manager.randomNormal(new Shape(1, 64)),
                manager.randomNormal(new Shape(32, 64)).transpose(), null, 1), "a transposed weight");
    }

    /** Runs the tasks one after another on the calling thread, as the workers would split them. */
    private static boolean inTurn(IntFunction<NDArray> task, int parts) {
        for (int i = parts - 1; i >= 0; i--) {
            task.apply(i);
        }
        return true;
    }

    @ParameterizedTest
    @CsvSource({
        "768, 2304, 1", "768, 2304, 2", "3072, 768, 2", "768, 768, 3", "100, 257, 2", "13, 17, 3", "1, 3, 1",
        "2, 3, 2", "1030, 1027, 2", "13, 1030, 3", "3, 1024, 2"
    })
    void oneRowOfAnInOutWeightReadByRunsOfRowsEqualsTheEnginesProduct(int in, int out, int parts) {
        NDArray weight = weight(Layout.IN_OUT, in, out);
        NDArray bias = manager.randomNormal(new Shape(out));
        NDArray x = manager.randomNormal(new Shape(1, 1, in)); // a decode step: (1, 1, in)
        for (boolean four : new boolean[] {true, false}) {
            for (NDArray b : new NDArray[] {bias, null}) {
                String what = "four rows " + four + ", bias " + (b != null);
                assertTrue(FewRowProduct.appliesByRows(x, weight, b, 1));
                NDArray actual = FewRowProduct.multiplyByRows(x, weight, b, parts, four, task -> inTurn(task, parts));
                assertEquals(new Shape(1, 1, out), actual.getShape());
                assertArrayEquals(engine(x, weight, b, Layout.IN_OUT).toFloatArray(), actual.toFloatArray(),
                        RoundingBound.ofProduct(x, weight, b, false), what);
                NDArray unsplit = FewRowProduct.multiplyByRows(x, weight, b, parts, four, task -> false);
                assertArrayEquals(actual.toFloatArray(), unsplit.toFloatArray(), 0f,
                        what + ": the shares computed here when the workers do not take them");
            }
        }
    }

    @Test
    void aStridedInputTakesTheEnginesPathThroughLinearAndGivesTheRightValues() {
        NDArray weight = manager.randomNormal(new Shape(1024, 256)); // over SplitProjection.MIN_ELEMENTS
        NDArray x = manager.randomNormal(new Shape(256, 8)).transpose(); // (8, 256), not contiguous
        NDArray actual = new CpuKernels(true, true).project(x, Projections.of(Layout.OUT_IN, weight, null), null, false);
        assertArrayEquals(engine(x, weight, null).toFloatArray(), actual.toFloatArray(), RoundingBound.ofProduct(x, weight, null, true));
    }

    @ParameterizedTest
    @CsvSource({
        "OUT_IN, 1", "OUT_IN, 2", "OUT_IN, 8", "OUT_IN, 9", "IN_OUT, 1", "IN_OUT, 2", "IN_OUT, 8", "IN_OUT, 9"
    })
    void projectionsThroughTheCpuKernelsOfAnyRowCountEqualTheEnginesAndTakeTheKernelsForOneToEightRows(
            Layout layout, int rows) {
        NDArray weight = weight(layout, 256, 1024); // over SplitProjection.MIN_ELEMENTS
        NDArray bias = manager.randomNormal(new Shape(1024));
        NDArray x = manager.randomNormal(new Shape(rows, 1, 256)); // (B, 1, in)
        NDArray actual = new CpuKernels(true, true).project(x, Projections.of(layout, weight, bias), null, false);
        assertEquals(new Shape(rows, 1, 1024), actual.getShape());
        assertArrayEquals(engine(x, weight, bias, layout).toFloatArray(), actual.toFloatArray(),
                RoundingBound.ofProduct(x, weight, bias, layout == Layout.OUT_IN));
        if (layout == Layout.IN_OUT && FewRowProduct.appliesByRows(x, weight, bias, rows)) {
            int parts = CoreWorkers.PARALLELISM;
            NDArray byRows = FewRowProduct.multiplyByRows(x, weight, bias, parts, true, task -> inTurn(task, parts));
            assertArrayEquals(byRows.toFloatArray(), actual.toFloatArray(), 0f, "the by-rows product");
        } else if (FewRowProduct.applies(x, weight, bias, rows, layout)) {
            NDArray kernel = FewRowProduct.output(x, weight, layout);
            FewRowProduct.multiply(x, weight, bias, kernel, 0, 1024, layout);
            assertArrayEquals(kernel.toFloatArray(), actual.toFloatArray(), 0f, "the kernel's own product");
        } else {
            assertTrue(rows < FewRowProduct.minRows(layout) || rows > FewRowProduct.MAX_ROWS, rows + " rows");
        }
    }
}
