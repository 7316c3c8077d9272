package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.RoundingBound;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SplitProjectionTest extends ManagedArraysTest {

    private static final int IN = 384;
    private static final int OUT = 1000; // IN * OUT > MIN_ELEMENTS, and not divisible by the core count

    @Test
    void aLinearOfOneRowThroughTheCpuKernelsEqualsTheEnginesLinearAndCutsTheWeightOnce() {
        NDArray weight = manager.randomNormal(new Shape(OUT, IN)); // (out, in)
        NDArray bias = manager.randomNormal(new Shape(OUT));
        CpuKernels kernels = new CpuKernels(true, true);
        ProjectionWeight withBias = Projections.of(Layout.OUT_IN, weight, bias);
        ProjectionWeight withoutBias = Projections.of(Layout.OUT_IN, weight, null);
        int afterFirstStep = -1;
        for (int step = 0; step < 3; step++) { // the slices are made once and reused
            try (NDManager scope = manager.newSubManager()) {
                NDArray x = scope.randomNormal(new Shape(1, 1, IN));
                NDArray expected = x.getNDArrayInternal().linear(x, weight, bias).singletonOrThrow();
                NDArray actual = kernels.project(x, withBias, null, false);
                assertEquals(new Shape(1, 1, OUT), actual.getShape());
                assertEquals(scope, actual.getManager());
                assertArrayEquals(expected.toFloatArray(), actual.toFloatArray(),
                        RoundingBound.ofProduct(x, weight, bias, true));
                NDArray noBias = kernels.project(x, withoutBias, null, false);
                NDArray expectedNoBias = x.getNDArrayInternal().linear(x, weight, null).singletonOrThrow();
                assertArrayEquals(expectedNoBias.toFloatArray(), noBias.toFloatArray(),
                        RoundingBound.ofProduct(x, weight, null, true));
            }
            if (step == 0) {
                afterFirstStep = manager.getManagedArrays().size();
            }
            assertEquals(afterFirstStep, manager.getManagedArrays().size(), "arrays of the weights' manager, step " + step);
        }
    }

    @Test
    void aSplitMatMulAddOfOneRowEqualsMatMulPlusBias() {
        NDArray weight = manager.randomNormal(new Shape(IN, OUT)); // (in, out), GPT-2's Conv1D
        NDArray bias = manager.randomNormal(new Shape(OUT));
        SplitProjection split = new SplitProjection(true, true);
        try (NDManager scope = manager.newSubManager()) {
            NDArray x = scope.randomNormal(new Shape(1, 1, IN));
            NDArray actual = split.matMulAdd(x, weight, bias, false);
            assertEquals(new Shape(1, 1, OUT), actual.getShape());
            assertArrayEquals(x.matMul(weight).add(bias).toFloatArray(), actual.toFloatArray(),
                    RoundingBound.ofProduct(x, weight, bias, false));
        }
    }

    @Test
    void severalRowsAndTrainingPassesGiveTheSameValuesAsTheEngine() {
        NDArray weight = manager.randomNormal(new Shape(OUT, IN));
        SplitProjection split = new SplitProjection(true, true);
        try (NDManager scope = manager.newSubManager()) {
            NDArray rows = scope.randomNormal(new Shape(2, 3, IN));
            assertArrayEquals(
                    rows.getNDArrayInternal().linear(rows, weight, null).singletonOrThrow().toFloatArray(),
                    split.linear(rows, weight, null, false).toFloatArray(),
                    RoundingBound.ofProduct(rows, weight, null, true));
            NDArray one = scope.randomNormal(new Shape(1, 1, IN));
            assertArrayEquals(
                    one.getNDArrayInternal().linear(one, weight, null).singletonOrThrow().toFloatArray(),
                    split.linear(one, weight, null, true).toFloatArray(),
                    RoundingBound.ofProduct(one, weight, null, true));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 8, 16, 64, 65})
    void aBatchOfRowsEqualsTheEngineAndLeavesNothingInTheWeightsManager(int rows) {
        NDArray weight = manager.randomNormal(new Shape(OUT, IN)); // (out, in)
        NDArray bias = manager.randomNormal(new Shape(OUT));
        NDArray conv = manager.randomNormal(new Shape(IN, OUT)); // (in, out)
        SplitProjection linear = new SplitProjection(true, true);
        SplitProjection matMulAdd = new SplitProjection(true, true);
        int afterFirstStep = -1;
        for (int step = 0; step < 3; step++) {
            try (NDManager scope = manager.newSubManager()) {
                NDArray x = scope.randomNormal(new Shape(rows, 1, IN));
                NDArray expected = x.getNDArrayInternal().linear(x, weight, bias).singletonOrThrow();
                NDArray actual = linear.linear(x, weight, bias, false);
                assertEquals(new Shape(rows, 1, OUT), actual.getShape());
                assertEquals(scope, actual.getManager());
                assertArrayEquals(expected.toFloatArray(), actual.toFloatArray(),
                        RoundingBound.ofProduct(x, weight, bias, true));
                NDArray actualConv = matMulAdd.matMulAdd(x, conv, bias, false);
                assertEquals(new Shape(rows, 1, OUT), actualConv.getShape());
                assertEquals(scope, actualConv.getManager());
                assertArrayEquals(x.matMul(conv).add(bias).toFloatArray(), actualConv.toFloatArray(),
                        RoundingBound.ofProduct(x, conv, bias, false));
            }
            // The slices of each weight (views) are made on the first step; no product stays behind.
            if (step == 0) {
                afterFirstStep = manager.getManagedArrays().size();
            }
            assertEquals(afterFirstStep, manager.getManagedArrays().size(), "arrays of the weights' manager, step " + step);
        }
    }

    /**
     * Each core writing its columns into the whole output holds the same floats as the shares
     * joined afterwards: the same products, and the bias added by one float addition either way.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 3, 16})
    void sharesWrittenIntoTheirColumnsEqualTheJoinedSharesBitForBit(int rows) throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: nothing is split");
        NDArray weight = manager.randomNormal(new Shape(OUT, IN)); // (out, in)
        NDArray conv = manager.randomNormal(new Shape(IN, OUT)); // (in, out)
        NDArray bias = manager.randomNormal(new Shape(OUT));
        SplitProjection placed = new SplitProjection(false, true);
        SplitProjection joined = new SplitProjection(false, false);
        try (NDManager scope = manager.newSubManager()) {
            NDArray x = scope.randomNormal(new Shape(rows, 1, IN));
            assertArrayEquals(joined.linear(x, weight, bias, false).toFloatArray(),
                    placed.linear(x, weight, bias, false).toFloatArray(), "linear");
            NDArray fromPlaced = placed.matMulAdd(x, conv, bias, false);
            assertEquals(new Shape(rows, 1, OUT), fromPlaced.getShape());
            assertArrayEquals(joined.matMulAdd(x, conv, bias, false).toFloatArray(), fromPlaced.toFloatArray(),
                    "matMulAdd");
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 8, 128})
    void aPairOfProjectionsOnTwoCoresEqualsTheEnginesLinearAndLeavesNothingInTheWeightsManager(int rows) {
        NDArray[] weights = {manager.randomNormal(new Shape(OUT, IN)), manager.randomNormal(new Shape(OUT, IN))};
        NDArray[] biases = {manager.randomNormal(new Shape(OUT)), null};
        for (NDArray weight : weights) {
            weight.setRequiresGradient(true); // as a model's parameters do
        }
        int weightArrays = manager.getManagedArrays().size();
        int threads = TorchThreads.intraOp();
        try (NDManager scope = NDManager.newBaseManager("PyTorch")) {
            TorchThreads.setIntraOp(1); // as bin/llmzoo runs it: a prefill is split too
            NDArray x = scope.randomNormal(new Shape(1, rows, IN));
            NDArray[] pair = SplitProjection.pair(x, weights, biases, false, true);
            if (CoreWorkers.PARALLELISM != 2) {
                assertNull(pair, "with " + CoreWorkers.PARALLELISM + " cores each product is split across all");
                return;
            }
            assertNotNull(pair);
            for (int i = 0; i < 2; i++) {
                NDArray expected = x.getNDArrayInternal().linear(x, weights[i], biases[i]).singletonOrThrow();
                assertEquals(new Shape(1, rows, OUT), pair[i].getShape());
                assertEquals(scope, pair[i].getManager());
                assertArrayEquals(expected.toFloatArray(), pair[i].toFloatArray(),
                        RoundingBound.ofProduct(x, weights[i], biases[i], true));
                assertFalse(pair[i].hasGradient(), "product " + i + " recorded for autograd");
            }
            assertEquals(weightArrays, manager.getManagedArrays().size(), "arrays of the weights' manager");
            assertNull(SplitProjection.pair(x, weights, biases, true, true), "a training pass takes the engine's calls");
            NDArray[] unequal = {weights[0], manager.randomNormal(new Shape(OUT / 2, IN))};
            assertNull(SplitProjection.pair(x, unequal, biases, false, true), "weights of different shapes");
        } finally {
            TorchThreads.setIntraOp(threads);
        }
    }

    @Test
    void aPrefillIsSplitOnlyWhereTheEngineComputesOnOneThread() {
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: nothing is split");
        NDArray weight = manager.randomNormal(new Shape(OUT, IN));
        NDArray conv = manager.randomNormal(new Shape(IN, OUT));
        NDArray bias = manager.randomNormal(new Shape(OUT));
        int threads = TorchThreads.intraOp();
        try (NDManager inputs = NDManager.newBaseManager("PyTorch")) { // not counted with the weights
            NDArray x = inputs.randomNormal(new Shape(1, 128, IN)); // a 128-token prompt
            int before = manager.getManagedArrays().size();
            TorchThreads.setIntraOp(2);
            new SplitProjection(true, true).linear(x, weight, bias, false);
            assertEquals(before, manager.getManagedArrays().size(), "two engine threads: no slices made");
            TorchThreads.setIntraOp(1);
            NDArray linear = new SplitProjection(true, true).linear(x, weight, bias, false);
            NDArray matMulAdd = new SplitProjection(true, true).matMulAdd(x, conv, bias, false);
            assertEquals(before + 4 * CoreWorkers.PARALLELISM, manager.getManagedArrays().size(),
                    "slices of both weights, and of the bias for each");
            assertArrayEquals(
                    x.getNDArrayInternal().linear(x, weight, bias).singletonOrThrow().toFloatArray(),
                    linear.toFloatArray(),
                    RoundingBound.ofProduct(x, weight, bias, true));
            assertArrayEquals(x.matMul(conv).add(bias).toFloatArray(), matMulAdd.toFloatArray(),
                    RoundingBound.ofProduct(x, conv, bias, false));
        } finally {
            TorchThreads.setIntraOp(threads);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 8})
    void concurrentCallersAllGetTheirOwnResults(int rows) throws Exception {
        NDArray weight = manager.randomNormal(new Shape(OUT, IN));
        SplitProjection split = new SplitProjection(true, true);
        try (NDManager scope = manager.newSubManager()) { // makes the slices
            split.linear(scope.randomNormal(new Shape(rows, 1, IN)), weight, null, false);
        }
        int arrays = manager.getManagedArrays().size();
        ExecutorService callers = Executors.newFixedThreadPool(3);
        try {
            List<Future<Void>> done = new ArrayList<>();
            for (int c = 0; c < 3; c++) {
                Callable<Void> caller =
                        () -> {
                            for (int i = 0; i < 50; i++) {
                                try (NDManager scope = manager.newSubManager()) {
                                    NDArray x = scope.randomNormal(new Shape(rows, 1, IN));
                                    NDArray expected = x.getNDArrayInternal().linear(x, weight, null).singletonOrThrow();
                                    NDArray actual = split.linear(x, weight, null, false);
                                    assertEquals(scope, actual.getManager());
                                    assertArrayEquals(expected.toFloatArray(), actual.toFloatArray(),
                                            RoundingBound.ofProduct(x, weight, null, true));
                                }
                            }
                            return null;
                        };
                done.add(callers.submit(caller));
            }
            for (Future<Void> f : done) {
                f.get();
            }
            // Callers that found the workers busy computed alone; none left a product behind.
            assertEquals(arrays, manager.getManagedArrays().size());
        } finally {
            callers.shutdown();
        }
    }
}
