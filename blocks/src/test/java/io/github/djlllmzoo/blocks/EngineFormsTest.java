package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link EngineKernels}' inference forms ({@link EngineForms}) against the same kernels' plain
 * operations (a training pass takes those): the fused products, the layer-norm form of RMSNorm
 * before them and the rotation matrices agree to float32 rounding, and a weight changed in place is
 * seen.
 */
class EngineFormsTest {

    private static final int IN = 48;
    private static final int HEADS = 4;
    private static final int KV_HEADS = 2;
    private static final int HEAD_DIM = 8;
    private static final Kernels K = EngineKernels.INSTANCE;

    private static ProjectionWeight[] qkv(NDManager manager, boolean bias) {
        int[] outs = {HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM};
        ProjectionWeight[] weights = new ProjectionWeight[outs.length];
        for (int i = 0; i < outs.length; i++) {
            Linear linear = new Linear(IN, outs[i], bias, 0.02f);
            linear.initialize(manager, DataType.FLOAT32, new Shape(1, IN));
            linear.weight().getArray().addi(manager.randomNormal(0, 0.3f, new Shape(outs[i], IN), DataType.FLOAT32));
            weights[i] = linear.projection();
        }
        return weights;
    }

    private static void assertClose(NDArray expected, NDArray actual, int terms, String what) {
        assertEquals(expected.getShape(), actual.getShape(), what);
        double norm = expected.abs().max().getFloat() * Math.sqrt(terms) + 1;
        double bound = RoundingBound.MARGIN * RoundingBound.EPSILON * norm;
        double error = expected.sub(actual).abs().max().getFloat();
        assertTrue(error <= bound, what + ": " + error + " > " + bound);
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void fusedProductsAreTheSeparateProducts(boolean bias) {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            ProjectionWeight[] weights = qkv(manager, bias);
            NDArray x = manager.randomNormal(new Shape(3, 5, IN));
            NDArray[] fused = K.projectAll(x, weights, null, false);
            NDArray[] plain = K.projectAll(x, weights, null, true);
            for (int i = 0; i < weights.length; i++) {
                assertClose(plain[i], fused[i], IN, "projection " + i);
            }
        }
    }

    @Test
    void aWeightChangedInPlaceIsSeenOnceATrainingPassOrAMergeSaysWeightsChanged() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            ProjectionWeight[] weights = qkv(manager, false);
            NDArray x = manager.randomNormal(new Shape(1, 1, IN));
            K.projectAll(x, weights, null, false); // makes the fused copy
            weights[1].weightParameter().getArray().addi(manager.ones(new Shape(KV_HEADS * HEAD_DIM, IN)));
            K.projectAll(x, weights, null, true); // a training pass: the optimizer changes weights after it
            NDArray[] fused = K.projectAll(x, weights, null, false);
            NDArray[] plain = K.projectAll(x, weights, null, true);
            assertClose(plain[1], fused[1], IN, "keys after the change");
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aRowsNormedGatedProjectIsTheReferenceNormThenTheProducts(boolean unitOffset) {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            ProjectionWeight[] gateUp = qkv(manager, false); // two of them, as gate and up
            NDArray x = manager.randomNormal(0, 3, new Shape(4, 1, IN), DataType.FLOAT32);
            NDArray w = manager.randomNormal(new Shape(IN));
            NDArray plain = K.normedGatedProject(x, w, 1e-6f, unitOffset, gateUp[1], gateUp[2],
                    io.github.djlllmzoo.blocks.config.HiddenActivation.SILU, null, true);
            NDArray layerNormed = K.normedGatedProject(x, w, 1e-6f, unitOffset, gateUp[1], gateUp[2],
                    io.github.djlllmzoo.blocks.config.HiddenActivation.SILU, null, false);
            assertClose(plain, layerNormed, IN, "activated products");
        }
    }

    @Test
    void normedProjectRotateIsTheNormThenTheProductsThenTheRotation() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            ProjectionWeight[] weights = qkv(manager, true);
            RotaryEmbedding rope = new RotaryEmbedding(HEAD_DIM, 64, 10_000, null);
            NDList cosSin = rope.cosSin(manager.create(new long[] {5, 9}, new Shape(2, 1)), manager, DataType.FLOAT32);
            NDArray x = manager.randomNormal(new Shape(2, 1, IN));
            NDArray w = manager.randomNormal(new Shape(IN));
            Shape[] shapes = {new Shape(2, HEADS, 1, HEAD_DIM), new Shape(2, KV_HEADS, 1, HEAD_DIM),
                new Shape(2, KV_HEADS, 1, HEAD_DIM)};
            NDArray[] plain = K.normedProjectRotate(x, w, 1e-5f, false, weights, shapes, cosSin, null, true);
            NDArray[] fused = K.normedProjectRotate(x, w, 1e-5f, false, weights, shapes, cosSin, null, false);
            for (int i = 0; i < 3; i++) {
                assertClose(plain[i], fused[i], IN, "result " + i);
            }
        }
    }
}
