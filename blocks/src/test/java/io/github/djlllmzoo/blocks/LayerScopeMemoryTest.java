package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import org.junit.jupiter.api.Test;

/** A pass over many positions frees each layer's intermediate arrays as the layer returns. */
class LayerScopeMemoryTest {

    private static final int[] LAYERS = {2, 5};

    @Test
    void aTrainingPassHoldsNoIntermediateArrayOfItsLayersOnceTheyReturn() throws Exception {
        // each layer leaves its output (the next one's input, which the backward pass may read) and a view of the mask
        assertAtMostPerLayer(2, heldArrays((model, pass) -> {
            NDArray weight = model.namedParameters().get("layers.0.self_attn.q_proj.weight").getArray();
            weight.setRequiresGradient(true);
            int held;
            try (GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
                NDArray logits = model.forward(null, ids(pass), null, null, null, false, true);
                held = pass.getManagedArrays().size();
                collector.backward(logits.sum());
            }
            assertEquals(false, weight.getGradient().eq(0).all().getBoolean(), "the gradient still reaches the first layer");
            return held;
        }));
    }

    @Test
    void aPrefillHoldsNoIntermediateArrayOfItsLayersOnceTheyReturn() throws Exception {
        // a layer's input is freed once the layer returns: each leaves only a view of the pass's mask
        assertAtMostPerLayer(1, heldArrays((model, pass) -> {
            try (KvCache cache = model.newCache(pass, 2, 3)) {
                NDArray ids = ids(pass);
                int before = pass.getManagedArrays().size();
                model.forward(null, ids, null, null, cache, true, false);
                assertEquals(3, cache.length(), "the prefill stored every position");
                return pass.getManagedArrays().size() - before;
            }
        }));
    }

    /** A forward pass in the given manager; returns how many arrays the manager holds after it. */
    private interface Pass {
        int held(CausalLmBlock model, NDManager pass) throws Exception;
    }

    /** What {@code pass} leaves in its manager on models of each of {@link #LAYERS} layers. */
    private static int[] heldArrays(Pass pass) throws Exception {
        int[] held = new int[LAYERS.length];
        for (int i = 0; i < LAYERS.length; i++) {
            try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
                CausalLmBlock model = DecoderModels.create(TinyConfigs.llama(LAYERS[i]));
                LlamaModelTest.setRandomWeights(model, manager);
                try (NDManager scope = manager.newSubManager()) {
                    held[i] = pass.held(model, scope);
                }
            }
        }
        return held;
    }

    /** (2, 3) token ids. */
    private static NDArray ids(NDManager pass) {
        return pass.create(new long[] {3, 1, 4, 1, 5, 9}, new Shape(2, 3));
    }

    /** Asserts that a pass leaves at most {@code most} arrays in its manager per layer. */
    private static void assertAtMostPerLayer(int most, int[] held) {
        int perLayer = (held[1] - held[0]) / (LAYERS[1] - LAYERS[0]);
        assertTrue(perLayer <= most, "arrays the pass's manager holds per layer: " + perLayer + " (" + held[0]
                + " with " + LAYERS[0] + " layers, " + held[1] + " with " + LAYERS[1] + ")");
    }
}
