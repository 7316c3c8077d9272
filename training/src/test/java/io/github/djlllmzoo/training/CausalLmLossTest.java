package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import io.github.djlllmzoo.blocks.FreedJavaMemory;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class CausalLmLossTest {

    private static final int B = 2;
    private static final int T = 4;
    private static final int V = 7;
    private static final long IGNORE = CausalLmLoss.IGNORE_INDEX;

    private NDManager manager;
    private double[] logits;
    private NDArray logitArray;

    @BeforeEach
    void setUp() {
        manager = NDManager.newBaseManager("PyTorch");
        Random random = new Random(5);
        logits = new double[B * T * V];
        for (int i = 0; i < logits.length; i++) {
            logits[i] = 3 * random.nextGaussian();
        }
        logitArray = manager.create(logits, new Shape(B, T, V));
    }

    @AfterEach
    void tearDown() {
        manager.close();
    }

    @Test
    void lossIsTheMeanNegativeLogLikelihoodOfTheCountedPositionsOnly() {
        long[] targets = {3, IGNORE, 6, 0, IGNORE, IGNORE, 2, 5};
        double loss = evaluate(new NDList(manager.create(targets, new Shape(B, T))));
        assertEquals(byHand(targets, null), loss, float64Tolerance(logits, V, B * T));
    }

    @Test
    void theStepsLossKeepsItsDivisorForTheBackwardPassWhenGarbageIsCollectedBetween()
            throws InterruptedException {
        long[] targets = {3, IGNORE, 6, 0, IGNORE, IGNORE, 2, 5};
        assertArrayEquals(logitGradient(targets, false), logitGradient(targets, true));
    }

    /** The gradient of float32 logits through {@link CausalLmLoss.TokenLoss#sumOver}. */
    private float[] logitGradient(long[] targets, boolean collectBeforeBackward) throws InterruptedException {
        try (NDManager pass = manager.newSubManager()) {
            NDArray x = logitArray.toType(DataType.FLOAT32, true);
            x.attach(pass);
            x.setRequiresGradient(true);
            NDList labels = new NDList(pass.create(targets, new Shape(B, T)));
            try (GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
                long baseline = FreedJavaMemory.directBuffers();
                NDArray loss = new CausalLmLoss().tokenLoss(labels, new NDList(x)).sumOver(10);
                List<ByteBuffer> refills =
                        collectBeforeBackward ? FreedJavaMemory.collectAndOverwrite(baseline) : List.of();
                collector.backward(loss);
                Reference.reachabilityFence(refills);
            }
            return x.getGradient().toFloatArray();
        }
    }

    @Test
    void aMaskArrayExcludesPositionsAsIgnoredLabelsDo() {
        long[] targets = {3, 1, 6, 0, 4, 4, 2, 5};
        long[] mask = {1, 0, 1, 1, 0, 0, 1, 1};
        double masked =
                evaluate(new NDList(manager.create(targets, new Shape(B, T)), manager.create(mask, new Shape(B, T))));
        double tolerance = float64Tolerance(logits, V, B * T);
        assertEquals(byHand(targets, mask), masked, tolerance);
        long[] ignored = {3, IGNORE, 6, 0, IGNORE, IGNORE, 2, 5};
        assertEquals(evaluate(new NDList(manager.create(ignored, new Shape(B, T)))), masked, tolerance);
    }

    @Test
    void noCountedPositionGivesZeroLoss() {
        long[] targets = new long[B * T];
        java.util.Arrays.fill(targets, IGNORE);
        assertEquals(0.0, evaluate(new NDList(manager.create(targets, new Shape(B, T)))), 0.0);
        assertEquals(0L, CausalLmLoss.countedTokens(new NDList(manager.create(targets, new Shape(B, T)))));
    }

    @Test
    void labelsThatDoNotMatchTheLogitsAreRejected() {
        NDList labels = new NDList(manager.zeros(new Shape(B, T + 1), DataType.INT64));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> new CausalLmLoss().evaluate(labels, new NDList(logitArray)));
        assertEquals(true, e.getMessage().contains("(2, 5)"), e.getMessage());
    }

    @Test
    void theLossHoldsNoArrayOfTheLogitsSizeButTheLogitsAndItsGradientIsStillSoftmaxMinusTarget() {
        long[] targets = {3, IGNORE, 6, 0, 1, IGNORE, 2, 5};
        Shape full = new Shape(B, T, V);
        logitArray.setRequiresGradient(true);
        try (GradientCollector collector = manager.getEngine().newGradientCollector()) {
            CausalLmLoss.TokenLoss loss =
                    new CausalLmLoss().tokenLoss(new NDList(manager.create(targets, new Shape(B, T))), new NDList(logitArray));
            long held = manager.getManagedArrays().stream().filter(a -> a.getShape().equals(full)).count();
            assertEquals(1, held, "(B, T, V) arrays the manager holds: the logits alone");
            collector.backward(loss.sum());
        }
        double[] gradient = logitArray.getGradient().toDoubleArray();
        double tolerance = float64Tolerance(logits, V, 1) + Math.ulp(1.0);
        for (int p = 0; p < B * T; p++) {
            double logZ = logSumExp(p);
            for (int v = 0; v < V; v++) {
                double expected = targets[p] == IGNORE ? 0 : Math.exp(logits[p * V + v] - logZ) - (v == targets[p] ? 1 : 0);
                assertEquals(expected, gradient[p * V + v], tolerance, "d loss / d logits[" + p + ", " + v + "]");
            }
        }
    }

    private double evaluate(NDList labels) {
        return new CausalLmLoss().evaluate(labels, new NDList(logitArray)).getDouble();
    }

    /**
     * How far two float64 computations of a mean next-token loss may differ: each token's loss {@code
     * max + log(sum exp(x - max)) - x[target]} combines values of at most {@code 2 max|x| + log V}
     * through the {@code V} terms of its sum and a few operations (exp and log within an ulp), and
     * the mean adds the {@code positions} token losses; each rounding is off by at most float64's
     * unit roundoff of those magnitudes.
     */
    static double float64Tolerance(double[] logits, int vocab, int positions) {
        double largest = 0;
        for (double x : logits) {
            largest = Math.max(largest, Math.abs(x));
        }
        return (vocab + positions + 4) * (Math.ulp(1.0) / 2) * (2 * largest + Math.log(vocab));
    }

    /** Mean over counted positions of log(sum exp(logits)) - logits[target]. */
    private double byHand(long[] targets, long[] mask) {
        double sum = 0;
        int count = 0;
        for (int p = 0; p < B * T; p++) {
            if (targets[p] == IGNORE || (mask != null && mask[p] == 0)) {
                continue;
            }
            sum += logSumExp(p) - logits[p * V + (int) targets[p]];
            count++;
        }
        return sum / count;
    }

    /** log(sum exp(logits)) at position {@code p}. */
    private double logSumExp(int p) {
        double max = Double.NEGATIVE_INFINITY;
        for (int v = 0; v < V; v++) {
            max = Math.max(max, logits[p * V + v]);
        }
        double z = 0;
        for (int v = 0; v < V; v++) {
            z += Math.exp(logits[p * V + v] - max);
        }
        return max + Math.log(z);
    }
}
