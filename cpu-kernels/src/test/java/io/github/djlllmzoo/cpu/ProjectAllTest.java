package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.WeightFormat;
import java.io.IOException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link CpuKernels#projectAll}: attention's query, key and value of a decode step in one hand-over
 * to the cores, each equal to the reference's product.
 */
class ProjectAllTest extends ManagedArraysTest {

    private static final int HIDDEN = 512; // q, k and v of 1.5 x 512 x 512: large enough to split

    @BeforeEach
    void kernels() throws IOException {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    /** A grouped-query layer's q (HIDDEN, HIDDEN), k and v (HIDDEN / 4, HIDDEN), q with a bias. */
    private ProjectionWeight[] queryKeyValue() {
        return new ProjectionWeight[] {
            Projections.of(Layout.OUT_IN, weight(HIDDEN), manager.randomNormal(new Shape(HIDDEN))),
            Projections.of(Layout.OUT_IN, weight(HIDDEN / 4), null),
            Projections.of(Layout.OUT_IN, weight(HIDDEN / 4), null)
        };
    }

    private NDArray weight(int out) {
        return manager.randomNormal(0, 0.02f, new Shape(out, HIDDEN), DataType.FLOAT32);
    }

    /**
     * Float32 weights at 1 to 8 rows: the three products by the few-row kernel in one hand-over,
     * each the reference's product to float32 rounding of its sums.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 3, 8})
    void aDecodeStepsQueryKeyAndValueTakeOneHandOverAndEqualTheReference(int rows) {
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: nothing is handed over");
        ProjectionWeight[] weights = queryKeyValue();
        NDArray x = manager.randomNormal(new Shape(rows, 1, HIDDEN)); // (B, 1, E)
        CpuKernels kernels = new CpuKernels(true, true);
        long before = CoreWorkers.handOvers();
        NDArray[] all = kernels.projectAll(x, weights, null, false);
        assertEquals(1, CoreWorkers.handOvers() - before, "one hand-over for the three products");
        assertMatchesReference(x, weights, all);
    }

    /**
     * With {@code -Dllmzoo.cpu.off=projectAll} the query goes alone and key and value as a pair: two
     * hand-overs, the same products.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 8})
    void switchedOffTheQueryGoesAloneAndKeyAndValueAsAPair(int rows) {
        assumeTrue(CoreWorkers.PARALLELISM == 2, "the pair's one hand-over is for two cores");
        System.setProperty(KernelSwitches.PROPERTY, CpuKernels.PROJECT_ALL_SWITCH);
        CpuKernels kernels;
        try {
            kernels = new CpuKernels(true, true);
        } finally {
            System.clearProperty(KernelSwitches.PROPERTY);
        }
        ProjectionWeight[] weights = {
            Projections.of(Layout.OUT_IN, weight(HIDDEN), null),
            Projections.of(Layout.OUT_IN, weight(HIDDEN), null),
            Projections.of(Layout.OUT_IN, weight(HIDDEN), null)
        };
        NDArray x = manager.randomNormal(new Shape(rows, 1, HIDDEN));
        long before = CoreWorkers.handOvers();
        NDArray[] all = kernels.projectAll(x, weights, null, false);
        assertEquals(2, CoreWorkers.handOvers() - before, "the query's, then the pair's");
        assertMatchesReference(x, weights, all);
    }

    /** With the few-row kernel off, or for a prefill's rows, the products are still the reference's. */
    @ParameterizedTest
    @CsvSource({"true, 16", "false, 1", "false, 16"})
    void productsTheKernelDoesNotTakeEqualTheReference(boolean fewRowProduct, int rows) {
        ProjectionWeight[] weights = queryKeyValue();
        NDArray x = manager.randomNormal(new Shape(1, rows, HIDDEN)); // (B, T, E)
        NDArray[] all = new CpuKernels(fewRowProduct, true).projectAll(x, weights, null, false);
        assertMatchesReference(x, weights, all);
    }

    /** Compressed weights: one hand-over, each output exactly that weight's own decode product. */
    @ParameterizedTest
    @EnumSource(value = WeightFormat.class, names = {"INT8", "BFLOAT16", "FLOAT16"})
    void compressedQueryKeyAndValueTakeOneHandOverAndEqualEachProduct(WeightFormat format) {
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: nothing is handed over");
        ProjectionWeight[] weights = queryKeyValue();
        for (ProjectionWeight w : weights) {
            w.compress(format);
        }
        NDArray x = manager.randomNormal(new Shape(2, 1, HIDDEN));
        CpuKernels kernels = new CpuKernels(true, true);
        long before = CoreWorkers.handOvers();
        NDArray[] all = kernels.projectAll(x, weights, null, false);
        assertEquals(1, CoreWorkers.handOvers() - before, "one hand-over for the three products");
        for (int i = 0; i < weights.length; i++) {
            NDArray own = kernels.project(x, weights[i], null, false);
            assertEquals(own.getShape(), all[i].getShape());
            assertArrayEquals(own.toFloatArray(), all[i].toFloatArray(), 0f, format + " projection " + i);
        }
    }

    private void assertMatchesReference(NDArray x, ProjectionWeight[] weights, NDArray[] all) {
        NDArray[] reference = EngineKernels.INSTANCE.projectAll(x, weights, null, false);
        assertEquals(weights.length, all.length);
        for (int i = 0; i < weights.length; i++) {
            NDArray w = weights[i].weight(null, x.getDevice(), false);
            NDArray b = weights[i].bias(null, x.getDevice(), false);
            assertEquals(reference[i].getShape(), all[i].getShape());
            assertArrayEquals(reference[i].toFloatArray(), all[i].toFloatArray(),
                    RoundingBound.ofProduct(x, w, b, true), "projection " + i);
        }
    }
}
