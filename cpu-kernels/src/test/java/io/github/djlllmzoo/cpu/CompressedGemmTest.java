package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.WeightFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** A prefill's product with compressed codes by the CPU's dot-product instructions. */
class CompressedGemmTest extends CompressedWeightsTest {

    private static void assumeInstruction(WeightFormat format) {
        assumeTrue(CompressedGemm.takes(format), "no " + format + " dot-product instruction on this CPU");
    }

    /**
     * The kernel's product is the engine's product of the widened weight with the input on the
     * kernel's own grid (int8 per group of 32 for int8 and int4 weights, per super-block of 256 for q4_k's; the float32 input itself for 16-bit
     * weights), plus the bias: the integer sums (int8, int4) and the widening (16-bit) are exact, so only float32
     * rounding of the sums is left. Row counts that are no multiple of the kernel's 4 rows, column counts that are no
     * multiple of its 16 columns or its panel, inputs over one pass of 1024 (SPAN) and not a multiple
     * of it, both cores each with its own columns (out >= 32).
     */
    @ParameterizedTest
    @CsvSource({
        "INT8, 9, 64, 3", "INT8, 17, 96, 301", "INT8, 128, 768, 1000", "INT8, 130, 2048, 77", "INT8, 33, 4096, 40",
        "INT8, 13, 1056, 70",
        "INT4, 9, 64, 3", "INT4, 17, 96, 301", "INT4, 128, 768, 1000", "INT4, 130, 2048, 77", "INT4, 33, 4096, 40",
        "INT4, 13, 1056, 70",
        "INT6, 9, 64, 3", "INT6, 17, 96, 301", "INT6, 130, 2048, 77", "INT6, 13, 1056, 70",
        "BFLOAT16, 9, 64, 3", "BFLOAT16, 17, 96, 301", "BFLOAT16, 128, 768, 1000", "BFLOAT16, 130, 2048, 77",
        "BFLOAT16, 33, 4096, 40", "BFLOAT16, 13, 1056, 70",
        "FLOAT16, 9, 64, 3", "FLOAT16, 17, 96, 301", "FLOAT16, 128, 768, 1000", "FLOAT16, 130, 2048, 77",
        "FLOAT16, 33, 4096, 40", "FLOAT16, 13, 1056, 70",
        "Q4_K, 9, 64, 3", "Q4_K, 17, 96, 301", "Q4_K, 128, 768, 1000", "Q4_K, 130, 2048, 77", "Q4_K, 33, 4096, 40",
        "Q4_K, 13, 1056, 70"
    })
    void theKernelEqualsTheEnginesProductWithTheInputOnItsGrid(WeightFormat format, int rows, int in, int out) {
        assumeInstruction(format);
        CompressedWeight weight = compressed(out, in, format);
        NDArray widened = weight.toFloat32(manager); // (out, in)
        NDArray x = manager.randomNormal(new Shape(1, rows, in)); // a prefill: (B, T, in)
        NDArray onGrid = format.isGrouped()
                ? manager.create(CompressedProductTest.int8Grid(x.toFloatArray()), x.getShape())
                : format == WeightFormat.Q4_K
                        ? manager.create(KQuantProductTest.superBlockGrid(x.toFloatArray(), in), x.getShape())
                        : x;
        for (NDArray bias : new NDArray[] {manager.randomNormal(new Shape(out)), null}) {
            assertTrue(CompressedGemm.applies(x, weight, bias));
            NDArray actual = CompressedGemm.multiply(x, weight, bias, rows);
            assertEquals(new Shape(1, rows, out), actual.getShape());
            float[] expected = onGrid.getNDArrayInternal().linear(onGrid, widened, bias).singletonOrThrow().toFloatArray();
            assertArrayEquals(expected, actual.toFloatArray(), RoundingBound.ofProduct(onGrid, widened, bias, true),
                    format + " bias " + (bias != null));
        }
    }

    /**
     * Each row of the kernel's product depends on that row of the input alone, bit for bit: the
     * input is quantized per row (per group of 32, or per super-block for q4_k) and every (row,
     * column) sum is taken in the same order whatever the other rows, the row tiles' tails and the
     * split of the columns between the cores included. So several prompts' chunks stacked in one
     * pass (a decode loop's joining prompts) would compute what each chunk's own pass computes.
     */
    @ParameterizedTest
    @CsvSource({
        "INT8, 13, 768, 300", "INT8, 64, 2048, 77", "INT4, 13, 768, 300", "INT4, 64, 2048, 77", "INT6, 13, 768, 300",
        "BFLOAT16, 13, 768, 300", "FLOAT16, 13, 768, 300", "Q4_K, 13, 768, 300", "Q4_K, 64, 2048, 77"
    })
    void eachRowsProductDependsOnThatRowAlone(WeightFormat format, int rows, int in, int out) {
        assumeInstruction(format);
        CompressedWeight weight = compressed(out, in, format);
        NDArray bias = manager.randomNormal(new Shape(out));
        int chunks = 3;
        NDArray x = manager.randomNormal(new Shape(chunks, rows, in)); // chunks stacked: (R, T, in)
        float[] stacked = CompressedGemm.multiply(x, weight, bias, (long) chunks * rows).toFloatArray();
        for (int c = 0; c < chunks; c++) {
            NDArray alone = x.get(c).expandDims(0).duplicate(); // (1, T, in), contiguous
            float[] own = CompressedGemm.multiply(alone, weight, bias, rows).toFloatArray();
            float[] inStack = java.util.Arrays.copyOfRange(stacked, c * rows * out, (c + 1) * rows * out);
            assertArrayEquals(own, inStack, 0f, format + " chunk " + c);
        }
    }

    /**
     * A prefill's compressed projection takes the kernel where the CPU has the instruction, and the
     * widened weight's product with {@code -Dllmzoo.cpu.off=compressedGemm}, which differs from it by
     * the input's rounding to the kernel's grid or the order of the sums (so the switch is seen to
     * change the path).
     */
    @ParameterizedTest
    @CsvSource({"INT8", "INT4", "INT6", "BFLOAT16", "FLOAT16", "Q4_K"})
    void aPrefillsProjectionTakesTheKernelUnlessSwitchedOff(WeightFormat format) {
        assumeInstruction(format);
        ProjectionWeight projection = Projections.of(
                Layout.OUT_IN, manager.randomNormal(0, 0.02f, new Shape(512, 256), DataType.FLOAT32),
                manager.randomNormal(new Shape(512)));
        projection.compress(format);
        NDArray x = manager.randomNormal(new Shape(1, 20, 256));
        NDArray bias = projection.bias(null, x.getDevice(), false);
        float[] kernel = CompressedGemm.multiply(x, projection.compressed(), bias, 20).toFloatArray();
        float[] widened = new WideningBuffer().product(x, projection.compressed(), bias).toFloatArray();
        assertArrayEquals(kernel, new CpuKernels(true, true).project(x, projection, null, false).toFloatArray(), 0f);
        String before = System.getProperty(KernelSwitches.PROPERTY);
        System.setProperty(KernelSwitches.PROPERTY, CompressedGemm.SWITCH);
        try {
            assertArrayEquals(widened, new CpuKernels(true, true).project(x, projection, null, false).toFloatArray(),
                    0f);
        } finally {
            if (before == null) {
                System.clearProperty(KernelSwitches.PROPERTY);
            } else {
                System.setProperty(KernelSwitches.PROPERTY, before);
            }
        }
        assertFalse(java.util.Arrays.equals(kernel, widened), "the kernel's own sums show in its product");
    }

    @Test
    void widthsOutsideWholeGroupsViewsAndWrongBiasesAreLeftToTheWidening() {
        assumeInstruction(WeightFormat.INT8);
        CompressedWeight weight = compressed(40, 64, WeightFormat.INT8);
        NDArray x = manager.randomNormal(new Shape(16, 64));
        assertTrue(CompressedGemm.applies(x, weight, null));
        assertFalse(CompressedGemm.applies(manager.randomNormal(new Shape(64, 16)).transpose(), weight, null),
                "a transposed view");
        assertFalse(CompressedGemm.applies(x, weight, manager.randomNormal(new Shape(39))), "bias size");
        assertFalse(CompressedGemm.applies(x.toType(DataType.FLOAT64, false), weight, null), "float64");
        assertFalse(CompressedGemm.applies(manager.randomNormal(new Shape(16, 48)), compressed(40, 48,
                WeightFormat.INT8), null), "48 inputs: not whole groups of 32");
    }
}
