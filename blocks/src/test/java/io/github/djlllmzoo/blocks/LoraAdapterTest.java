package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LoraAdapterTest {

    private static final int IN = 5;
    private static final int OUT = 4;
    private static final int RANK = 2;
    private static final int TOKENS = 3;
    private static final List<String> LLAMA_ALL =
            List.of("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj");
    private static final List<String> GPT2_ALL = List.of("c_attn", "c_proj", "c_fc");

    @Test
    void gradientsOfAAndBMatchCentralDifferencesInFloat64() {
        Random random = new Random(5);
        double[] w = gaussian(random, OUT * IN);
        double[] bias = gaussian(random, OUT);
        double[] a = gaussian(random, RANK * IN);
        double[] b = gaussian(random, OUT * RANK);
        double[] x = gaussian(random, TOKENS * IN);
        double[] r = gaussian(random, TOKENS * OUT);
        LoraConfig config = new LoraConfig(RANK, 3, 0, List.of("p"));
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            Linear linear = linear(manager, w, bias);
            LoraWeights pair = pair(manager, config, a, b);
            pair.a().getArray().setRequiresGradient(true);
            pair.b().getArray().setRequiresGradient(true);
            linear.loraSlot().put(LoraAdapter.DEFAULT, pair);
            try (GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
                NDArray y = linear.forward(null, manager.create(x, new Shape(1, TOKENS, IN)), true);
                collector.backward(y.mul(manager.create(r, new Shape(1, TOKENS, OUT))).sum());
            }
            double[] gradA = pair.a().getArray().getGradient().toDoubleArray();
            double[] gradB = pair.b().getArray().getGradient().toDoubleArray();

            // The loss is linear in each single entry of A or B, so a central difference is exact
            // but for the rounding of its two losses: each a sum of TOKENS * OUT products of
            // outputs that are sums of IN + RANK + 1 terms, off by a few units of float64's
            // epsilon of the magnitudes summed, divided by 2h.
            double h = 1e-3;
            double magnitude = magnitude(config, w, bias, a, b, x, r);
            double bound = (IN + RANK + 4 + TOKENS * OUT) * Math.ulp(1.0) * magnitude / h;
            for (int i = 0; i < a.length; i++) {
                double fd = (loss(manager, config, w, bias, nudged(a, i, h), b, x, r)
                                - loss(manager, config, w, bias, nudged(a, i, -h), b, x, r)) / (2 * h);
                assertEquals(fd, gradA[i], bound, "dLoss/dA[" + i + "]");
            }
            for (int i = 0; i < b.length; i++) {
                double fd = (loss(manager, config, w, bias, a, nudged(b, i, h), x, r)
                                - loss(manager, config, w, bias, a, nudged(b, i, -h), x, r)) / (2 * h);
                assertEquals(fd, gradB[i], bound, "dLoss/dB[" + i + "]");
            }
            assertFalse(linear.weight().getArray().hasGradient(), "the frozen weight records no gradient");
        }
    }

    @Test
    void theUpdatesGradientsAreTheSameWhenGarbageIsCollectedBetweenTheForwardAndBackwardPasses()
            throws InterruptedException {
        double[][] undisturbed = trainingGradients(false);
        double[][] collected = trainingGradients(true);
        String[] names = {"A", "B", "the input"};
        for (int i = 0; i < names.length; i++) {
            assertArrayEquals(undisturbed[i], collected[i], 0.0, "the gradient of " + names[i]);
        }
    }

    /** The gradients of A, B and the input through a pair with dropout, from fixed values and seed. */
    private static double[][] trainingGradients(boolean collectBeforeBackward) throws InterruptedException {
        Random random = new Random(9);
        double[] a = gaussian(random, RANK * IN);
        double[] b = gaussian(random, OUT * RANK);
        double[] x = gaussian(random, TOKENS * IN);
        double[] r = gaussian(random, TOKENS * OUT);
        Engine engine = Engine.getEngine("PyTorch");
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            LoraWeights pair = pair(manager, new LoraConfig(RANK, 3, 0.2f, List.of("p")), a, b);
            pair.a().getArray().setRequiresGradient(true);
            pair.b().getArray().setRequiresGradient(true);
            NDArray input = manager.create(x, new Shape(1, TOKENS, IN));
            input.setRequiresGradient(true);
            NDArray upstream = manager.create(r, new Shape(1, TOKENS, OUT));
            try (GradientCollector collector = engine.newGradientCollector()) {
                engine.setRandomSeed(7);
                long baseline = FreedJavaMemory.directBuffers();
                NDArray delta = pair.delta(null, input, true);
                List<ByteBuffer> refills =
                        collectBeforeBackward ? FreedJavaMemory.collectAndOverwrite(baseline) : List.of();
                collector.backward(delta.mul(upstream).sum());
                Reference.reachabilityFence(refills);
            }
            return new double[][] {
                pair.a().getArray().getGradient().toDoubleArray(),
                pair.b().getArray().getGradient().toDoubleArray(),
                input.getGradient().toDoubleArray()
            };
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama", "gpt2"})
    void aFreshAdapterReproducesTheBaseLogitsToRounding(String family) throws Exception {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            CausalLmBlock model = model(family, manager);
            NDArray ids = ids(manager);
            float[] base = model.forward(null, ids, null, null, null, false, false).toFloatArray();
            LoraAdapter adapter = attachedFresh(model, family, manager, true);
            float[] adapted = model.forward(null, ids, null, null, null, false, false).toFloatArray();
            // The update is zero, but adding it makes contiguous arrays of the fused products' views,
            // which the engine may multiply in another order: equal to rounding, not to the bit.
            assertArrayEquals(base, adapted, RoundingBound.ofLogits(model.config(), 4, base));

            randomizeB(adapter, manager);
            float[] trained = model.forward(null, ids, null, null, null, false, false).toFloatArray();
            assertFalse(java.util.Arrays.equals(base, trained), "a non-zero B changes the logits");
            try (LoraAdapter.Selection none = LoraAdapter.select(null)) {
                assertArrayEquals(base, model.forward(null, ids, null, null, null, false, false).toFloatArray());
            }
            assertArrayEquals(trained, model.forward(null, ids, null, null, null, false, false).toFloatArray());
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama", "gpt2"})
    void mergedWeightsComputeWhatTheBasePlusAdapterComputes(String family) throws Exception {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            CausalLmBlock model = model(family, manager);
            NDArray ids = ids(manager);
            LoraAdapter adapter = attachedFresh(model, family, manager, false);
            randomizeB(adapter, manager);
            NDArray adapted = model.forward(null, ids, null, null, null, false, false);
            adapter.merge();
            NDArray merged = model.forward(null, ids, null, null, null, false, false);
            float bound = RoundingBound.ofLogits(model.config(), TOKENS, adapted);
            double error = LlamaModelTest.maxAbsDiff(adapted, merged);
            assertTrue(error < bound, "max |merged - adapted| = " + error + ", bound " + bound);
            try (LoraAdapter.Selection stillDefault = LoraAdapter.select(LoraAdapter.DEFAULT)) {
                assertArrayEquals(merged.toFloatArray(),
                        model.forward(null, ids, null, null, null, false, false).toFloatArray(),
                        "merging detaches the adapter");
            }
        }
    }

    @Test
    void theDefaultTargetsAreTheAttentionProjections() throws Exception {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            assertEquals(List.of("q_proj", "k_proj", "v_proj", "o_proj"),
                    LoraAdapter.attentionTargets(model("llama", manager)));
            CausalLmBlock gpt2 = model("gpt2", manager);
            List<String> targets = LoraAdapter.attentionTargets(gpt2);
            assertEquals(List.of("c_attn", "attn.c_proj"), targets);
            LoraAdapter adapter = LoraAdapter.declare(gpt2, new LoraConfig(2, 4, 0, targets), false);
            assertEquals(List.of("h.0.attn.c_attn", "h.0.attn.c_proj", "h.1.attn.c_attn", "h.1.attn.c_proj"),
                    List.copyOf(adapter.modules().keySet()));
            assertEquals(new Shape(2, 32), adapter.declaredShapes().get("h.0.attn.c_attn.lora_A.weight"));
            assertEquals(new Shape(96, 2), adapter.declaredShapes().get("h.0.attn.c_attn.lora_B.weight"));
        }
    }

    @Test
    void targetsThatMatchNoProjectionAreRefusedNamingTheProjections() throws Exception {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            CausalLmBlock model = model("llama", manager);
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class,
                            () -> LoraAdapter.declare(model, new LoraConfig(2, 4, 0, List.of("c_attn")), true));
            assertTrue(e.getMessage().contains("[c_attn]") && e.getMessage().contains("q_proj"), e.getMessage());
        }
    }

    private static LoraAdapter attachedFresh(
            CausalLmBlock model, String family, NDManager manager, boolean trainable) {
        return LoraAdapter.declare(model, config(family), trainable)
                .initialize(manager, DataType.FLOAT32)
                .attach(LoraAdapter.DEFAULT);
    }

    private static LoraConfig config(String family) {
        return new LoraConfig(RANK, 6, 0.05f, family.equals("gpt2") ? GPT2_ALL : LLAMA_ALL);
    }

    static CausalLmBlock model(String family, NDManager manager) throws Exception {
        DecoderConfig config;
        if (family.equals("gpt2")) {
            config = new Gpt2Config(97, 40, 32, 2, 4, 128, 1e-5f, 0.1f, 0.1f, 0.1f, 0, List.of(0), true);
        } else {
            JsonObject json = new JsonObject();
            json.addProperty("model_type", "llama");
            json.addProperty("num_hidden_layers", 2);
            json.addProperty("max_position_embeddings", 40);
            json.addProperty("vocab_size", 50);
            json.addProperty("hidden_size", 32);
            json.addProperty("intermediate_size", 48);
            json.addProperty("num_attention_heads", 4);
            json.addProperty("num_key_value_heads", 2);
            json.addProperty("tie_word_embeddings", false);
            config = LlamaConfig.parse(ConfigJson.of(null, json));
        }
        Engine.getEngine("PyTorch").setRandomSeed(11);
        CausalLmBlock model = DecoderModels.create(config);
        LlamaModelTest.setRandomWeights(model, manager);
        return model;
    }

    private static NDArray ids(NDManager manager) {
        return manager.create(new long[] {3, 1, 4, 1, 5, 9, 2, 6}, new Shape(2, 4));
    }

    private static void randomizeB(LoraAdapter adapter, NDManager manager) {
        for (LoraWeights pair : adapter.modules().values()) {
            pair.b().getArray().addi(manager.randomNormal(0, 0.5f, pair.bShape(), DataType.FLOAT32));
        }
    }

    private static Linear linear(NDManager manager, double[] w, double[] bias) {
        Linear linear = new Linear(IN, OUT, true, 0.02f);
        linear.weight().setArray(manager.create(w, new Shape(OUT, IN)));
        linear.getParameters().get("bias").setArray(manager.create(bias, new Shape(OUT)));
        return linear;
    }

    private static LoraWeights pair(NDManager manager, LoraConfig config, double[] a, double[] b) {
        LoraWeights pair = new LoraWeights(IN, OUT, config, false);
        pair.a().setArray(manager.create(a, new Shape(RANK, IN)));
        pair.b().setArray(manager.create(b, new Shape(OUT, RANK)));
        return pair;
    }

    private static double loss(
            NDManager parent, LoraConfig config, double[] w, double[] bias, double[] a, double[] b, double[] x,
            double[] r) {
        try (NDManager manager = parent.newSubManager()) {
            Linear linear = linear(manager, w, bias);
            linear.loraSlot().put(LoraAdapter.DEFAULT, pair(manager, config, a, b));
            NDArray y = linear.forward(null, manager.create(x, new Shape(1, TOKENS, IN)), false);
            return y.mul(manager.create(r, new Shape(1, TOKENS, OUT))).sum().getDouble();
        }
    }

    /** The sum over the loss's terms of the absolute values of everything they add up. */
    private static double magnitude(
            LoraConfig config, double[] w, double[] bias, double[] a, double[] b, double[] x, double[] r) {
        double total = 0;
        for (int t = 0; t < TOKENS; t++) {
            double[] down = new double[RANK];
            for (int k = 0; k < RANK; k++) {
                for (int i = 0; i < IN; i++) {
                    down[k] += Math.abs(a[k * IN + i] * x[t * IN + i]);
                }
            }
            for (int o = 0; o < OUT; o++) {
                double y = Math.abs(bias[o]);
                for (int i = 0; i < IN; i++) {
                    y += Math.abs(w[o * IN + i] * x[t * IN + i]);
                }
                for (int k = 0; k < RANK; k++) {
                    y += config.scaling() * Math.abs(b[o * RANK + k]) * down[k];
                }
                total += Math.abs(r[t * OUT + o]) * y;
            }
        }
        return total;
    }

    private static double[] gaussian(Random random, int n) {
        double[] out = new double[n];
        for (int i = 0; i < n; i++) {
            out[i] = random.nextGaussian();
        }
        return out;
    }

    private static double[] nudged(double[] values, int i, double h) {
        double[] out = values.clone();
        out[i] += h;
        return out;
    }
}
