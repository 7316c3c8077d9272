package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.translate.NoopTranslator;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class Gpt2ModelTest {

    private static final Gpt2Config CONFIG =
            new Gpt2Config(97, 40, 32, 2, 4, 128, 1e-5f, 0.1f, 0.1f, 0.1f, 0, List.of(0), true);

    private NDManager manager;
    private Gpt2Model model;

    @BeforeEach
    void setUp() {
        Engine.getEngine("PyTorch").setRandomSeed(7);
        manager = NDManager.newBaseManager("PyTorch");
        model = new Gpt2Model(CONFIG);
        model.initialize(manager, DataType.FLOAT32, new Shape(1, 4));
    }

    @AfterEach
    void tearDown() {
        manager.close();
    }

    @Test
    void parameterNamesAndShapesFollowTheHuggingFaceCheckpoint() {
        Map<String, Shape> shapes = model.declaredShapes();
        assertEquals(new Shape(97, 32), shapes.get("wte.weight"));
        assertEquals(new Shape(40, 32), shapes.get("wpe.weight"));
        assertEquals(new Shape(32, 96), shapes.get("h.0.attn.c_attn.weight"));
        assertEquals(new Shape(96), shapes.get("h.1.attn.c_attn.bias"));
        assertEquals(new Shape(128, 32), shapes.get("h.1.mlp.c_proj.weight"));
        assertEquals(new Shape(32), shapes.get("ln_f.bias"));
        assertFalse(shapes.containsKey("lm_head.weight"), "GPT-2's head is tied to wte");
        // 2 embeddings + per layer (2 LN × 2 + c_attn 2 + c_proj 2 + c_fc 2 + c_proj 2) + ln_f 2
        assertEquals(2 + 2 * 12 + 2, shapes.size());
    }

    @Test
    void cachedDecodingEqualsFullRecomputeAtEveryStep() {
        long[] sequence = {5, 17, 3, 88, 41, 9, 60};
        int prompt = 3;
        try (NDManager scope = manager.newSubManager();
                KvCache cache = model.newCache(manager, 1, 2)) {
            NDArray first = scope.create(java.util.Arrays.copyOf(sequence, prompt), new Shape(1, prompt));
            NDArray cached = model.forward(null, first, null, null, cache, true, false);
            for (int t = prompt; t <= sequence.length; t++) {
                NDArray full =
                        model.forward(null, scope.create(java.util.Arrays.copyOf(sequence, t), new Shape(1, t)),
                                null, null, null, false, false);
                NDArray reference = full.get(0).get(t - 1);
                float[] expected = reference.toFloatArray();
                float[] actual = cached.reshape(-1).toFloatArray();
                assertArrayEquals(expected, actual, RoundingBound.ofLogits(CONFIG, t, reference),
                        "logits after " + t + " tokens");
                assertEquals(argmax(expected), argmax(actual));
                if (t < sequence.length) {
                    NDArray next = scope.create(new long[] {sequence[t]}, new Shape(1, 1));
                    cached = model.forward(null, next, null, null, cache, true, false);
                }
            }
            assertEquals(sequence.length, cache.length());
            assertTrue(cache.capacity() >= sequence.length, "the cache grew past its first capacity");
        }
    }

    @Test
    void aPassThatFailsPartWayLeavesTheCacheAsItWas() {
        long[] sequence = {5, 17, 3, 88, 41, 9};
        try (NDManager scope = manager.newSubManager();
                KvCache cache = model.newCache(manager, 2, 8)) {
            model.forward(null, scope.create(java.util.Arrays.copyOf(sequence, 4), new Shape(2, 2)), null, null,
                    cache, true, false);
            NDArray next = scope.create(new long[] {sequence[4], sequence[5]}, new Shape(2, 1));
            NDArray maskOfAnotherBatch = scope.ones(new Shape(3, 3), DataType.INT64);
            // Layer 0 stores the new position, then its attention fails on the mask.
            assertThrows(RuntimeException.class,
                    () -> model.forward(null, next, null, maskOfAnotherBatch, cache, true, false));
            assertEquals(2, cache.length());
            NDArray cached = model.forward(null, next, null, null, cache, true, false); // (2, 1, V)
            NDArray full = model.forward(null, scope.create(new long[] {5, 17, sequence[4], 3, 88, sequence[5]},
                    new Shape(2, 3)), null, null, null, false, false); // (2, 3, V)
            assertArrayEquals(full.get(":, 2:, :").toFloatArray(), cached.toFloatArray(), 1e-4f);
            assertEquals(3, cache.length());
        }
    }

    @Test
    void lastOnlyLogitsEqualTheLastRowOfAllLogits() {
        try (NDManager scope = manager.newSubManager()) {
            NDArray ids = scope.create(new long[] {1, 2, 3, 4, 5, 6}, new Shape(2, 3));
            NDArray all = model.forward(null, ids, null, null, null, false, false);
            NDArray last = model.forward(null, ids, null, null, null, true, false);
            assertEquals(new Shape(2, 1, 97), last.getShape());
            assertArrayEquals(all.get(":, 2:, :").toFloatArray(), last.toFloatArray(),
                    RoundingBound.ofLogits(CONFIG, 3, all));
        }
    }

    @Test
    void contextWindowOverflowIsAClearError() {
        try (NDManager scope = manager.newSubManager()) {
            NDArray ids = scope.zeros(new Shape(1, 41), DataType.INT64);
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> model.forward(null, ids, null, null, null, false, false));
            assertTrue(e.getMessage().contains("context window of 40"), e.getMessage());
        }
    }

    @Test
    void trainingForwardAppliesDropoutAndReachesEveryParameter() {
        try (NDManager scope = manager.newSubManager()) {
            NDArray ids = scope.create(new long[] {4, 8, 15, 16, 23, 42}, new Shape(1, 6));
            NDArray eval1 = model.forward(null, ids, null, null, null, false, false);
            NDArray eval2 = model.forward(null, ids, null, null, null, false, false);
            assertArrayEquals(eval1.toFloatArray(), eval2.toFloatArray(), 0f, "inference is deterministic");
            ParameterStore store = new ParameterStore(manager, false);
            try (GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
                NDArray train = model.forward(store, ids, null, null, null, false, true);
                assertFalse(
                        java.util.Arrays.equals(eval1.toFloatArray(), train.toFloatArray()),
                        "dropout changes the training forward");
                collector.backward(train.logSoftmax(-1).get(":, :, 0").sum().neg());
            }
            for (Map.Entry<String, Parameter> e : model.namedParameters().entrySet()) {
                NDArray grad = e.getValue().getArray().getGradient();
                assertTrue(grad.abs().sum().getFloat() > 0, "gradient reaches " + e.getKey());
            }
        }
    }

    @Test
    void aDjlPredictorRunsTheBlock() throws Exception {
        try (Model djlModel = Model.newInstance("gpt2-test", "PyTorch")) {
            Gpt2Model block = new Gpt2Model(CONFIG);
            block.initialize(djlModel.getNDManager(), DataType.FLOAT32, new Shape(1, 3));
            djlModel.setBlock(block);
            try (Predictor<NDList, NDList> predictor = djlModel.newPredictor(new NoopTranslator());
                    NDManager scope = manager.newSubManager()) {
                NDArray ids = scope.create(new long[] {3, 1, 4}, new Shape(1, 3));
                NDList out = predictor.predict(new NDList(ids));
                assertEquals(new Shape(1, 3, 97), out.singletonOrThrow().getShape());
                NDArray direct = block.forward(null, ids, null, null, null, false, false);
                assertArrayEquals(direct.toFloatArray(), out.singletonOrThrow().toFloatArray(),
                        RoundingBound.ofLogits(CONFIG, 3, direct));
            }
        }
    }

    private static int argmax(float[] values) {
        int best = 0;
        for (int i = 1; i < values.length; i++) {
            if (values[i] > values[best]) {
                best = i;
            }
        }
        return best;
    }
}
