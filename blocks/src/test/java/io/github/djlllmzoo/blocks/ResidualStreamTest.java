package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Where a decode step's sublayers add their output into the residual stream: kernels that add each
 * {@link Kernels#projectAdd} straight into the residual's memory (as the CPU kernels do at one row)
 * get both sublayers' last projections (the attention's output projection and the MLP's down
 * projection) from a model's decode step, and the layer's input array only when the model hands
 * it over; a layer called from outside leaves its input as it was.
 */
class ResidualStreamTest {

    private static final int LAYERS = 2;

    /** The engine's operations, but {@code projectAdd} adds the product into the residual in place. */
    private static final class AddingInPlace extends ForwardingKernels {
        int adds;

        AddingInPlace() {
            super(EngineKernels.INSTANCE);
        }

        @Override
        public NDArray[] projectAll(NDArray x, ProjectionWeight[] weights, ParameterStore store, boolean training) {
            return inner.projectAll(x, weights, store, training);
        }

        @Override
        public NDArray[] normedProjectAll(NDArray x, NDArray normWeight, float eps, boolean unitOffset,
                ProjectionWeight[] weights, Shape[] shapes, ParameterStore store, boolean training) {
            return inner.normedProjectAll(x, normWeight, eps, unitOffset, weights, shapes, store, training);
        }

        @Override
        public NDArray[] normedProjectRotate(NDArray x, NDArray normWeight, float eps, boolean unitOffset,
                ProjectionWeight[] weights, Shape[] shapes, NDList cosSin, ParameterStore store, boolean training) {
            return inner.normedProjectRotate(
                    x, normWeight, eps, unitOffset, weights, shapes, cosSin, store, training);
        }

        @Override
        public NDArray normedGatedProject(NDArray x, NDArray normWeight, float eps, boolean unitOffset,
                ProjectionWeight gate, ProjectionWeight up, HiddenActivation activation, ParameterStore store,
                boolean training) {
            return inner.normedGatedProject(x, normWeight, eps, unitOffset, gate, up, activation, store, training);
        }

        @Override
        public NDArray projectAdd(
                NDArray x, ProjectionWeight weight, NDArray residual, ParameterStore store, boolean training) {
            adds++;
            return residual.addi(project(x, weight, store, training));
        }
    }

    /**
     * A decode step hands both sublayers' residual additions to {@code projectAdd} (2 a layer, GPT-2's
     * biased c_proj pair too), and adding in place into the stream (x + y) gives the same logits bit
     * for bit as adding into the fresh product (y + x).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama", "gpt2"})
    void aDecodeStepAddsEachSublayerIntoTheModelsOwnStream(String family) throws Exception {
        try (NDManager manager = NDManager.newBaseManager()) {
            CausalLmBlock model = DecoderModels.create(config(family));
            LlamaModelTest.setRandomWeights(model, manager);
            float[][] logits = new float[2][];
            AddingInPlace inPlace = new AddingInPlace();
            Kernels[] kernels = {EngineKernels.INSTANCE, inPlace};
            for (int k = 0; k < kernels.length; k++) {
                model.useKernels(kernels[k]);
                try (KvCache cache = model.newCache(manager, 1, 8)) {
                    model.forward(null, manager.create(new long[] {3, 1, 4}, new Shape(1, 3)), null, null, cache,
                            false, false);
                    int before = inPlace.adds;
                    logits[k] = model.forward(null, manager.create(new long[] {5}, new Shape(1, 1)), null, null,
                            cache, false, false).toFloatArray();
                    if (kernels[k] == inPlace) {
                        assertEquals(LAYERS * 2, inPlace.adds - before,
                                "projectAdd calls of the decode step");
                    }
                }
            }
            assertArrayEquals(logits[0], logits[1], 0f);
        }
    }

    /** A layer called from outside adds into arrays of its own: its input comes back unchanged. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama", "gpt2"})
    void aLayerCalledFromOutsideLeavesItsInputAsItWas(String family) throws Exception {
        try (NDManager manager = NDManager.newBaseManager()) {
            CausalLmBlock model = DecoderModels.create(config(family));
            LlamaModelTest.setRandomWeights(model, manager);
            model.useKernels(new AddingInPlace());
            NDArray x = manager.randomNormal(new Shape(1, 1, 8));
            float[] before = x.toFloatArray();
            model.layers().get(0).forward(null, x, AttentionContext.causal(x), false);
            assertArrayEquals(before, x.toFloatArray(), 0f);
        }
    }

    private static DecoderConfig config(String family) throws Exception {
        return family.equals("llama") ? TinyConfigs.llama(LAYERS) : TinyConfigs.gpt2(LAYERS);
    }
}
