package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.ConfiguredBlock;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.Gpt2Model;
import io.github.djlllmzoo.blocks.AttentionScores;
import io.github.djlllmzoo.blocks.ForwardingKernels;
import io.github.djlllmzoo.blocks.KeyValues;
import io.github.djlllmzoo.blocks.Kernels;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.LlamaModel;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CpuKernelsTest extends ManagedArraysTest {

    private static final Gpt2Config CONFIG =
            new Gpt2Config(97, 40, 32, 2, 4, 128, 1e-5f, 0f, 0f, 0f, 0, List.of(0), true);

    private Gpt2Model model() {
        Gpt2Model model = new Gpt2Model(CONFIG);
        model.initialize(manager, DataType.FLOAT32, new Shape(1, 4));
        return model;
    }

    private static void assertEveryBlockComputesWith(Kernels kernels, Block block) {
        if (block instanceof ConfiguredBlock) {
            assertSame(kernels, ((ConfiguredBlock) block).kernels(), block.getClass().getSimpleName());
        }
        for (Block child : block.getChildren().values()) {
            assertEveryBlockComputesWith(kernels, child);
        }
    }

    @Test
    void aModelPyTorchRunsOnTheCpuChoosesTheCpuKernelsOnceForEveryBlock() {
        Gpt2Model model = model();
        Kernels kernels = model.kernels();
        assertInstanceOf(CpuKernels.class, kernels);
        assertSame(kernels, model.kernels(), "chosen once");
        try (NDManager step = manager.newSubManager()) {
            model.forward(null, step.create(new long[] {1, 2, 3}, new Shape(1, 3)), null, null, null, false, false);
        }
        assertSame(kernels, model.kernels(), "running does not choose again");
        assertEveryBlockComputesWith(kernels, model);
    }

    @Test
    void kernelsSetOnAModelReplaceItsChoice() {
        Gpt2Model model = model();
        model.useKernels(EngineKernels.INSTANCE);
        try (NDManager step = manager.newSubManager()) {
            model.forward(null, step.create(new long[] {1, 2, 3}, new Shape(1, 3)), null, null, null, false, false);
        }
        assertSame(EngineKernels.INSTANCE, model.kernels());
        assertEveryBlockComputesWith(EngineKernels.INSTANCE, model);
    }

    @Test
    void otherDevicesAndEnginesKeepTheEnginesOperations() {
        Engine pytorch = Engine.getEngine("PyTorch");
        assertTrue(new CpuKernelsProvider().kernels(pytorch, Device.gpu(), DataType.FLOAT32).isEmpty());
        assertSame(EngineKernels.INSTANCE, Kernels.forModel(pytorch, Device.gpu(), DataType.FLOAT32));
        assertInstanceOf(CpuKernels.class, Kernels.forModel(pytorch, Device.cpu(), DataType.FLOAT16));
    }

    @Test
    void theKernelSwitchesSetWhenAModelChoosesTurnTheNativeKernelsOff() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
        Engine pytorch = Engine.getEngine("PyTorch");
        CpuKernels both = (CpuKernels) Kernels.forModel(pytorch, Device.cpu(), DataType.FLOAT32);
        assertTrue(both.fewRowProduct());
        NDArray q = manager.randomNormal(new Shape(2, 4, 1, 8));
        try (KvCache cache = new KvCache(manager, new int[1], 2, 4, 8, 4, 8, DataType.FLOAT32)) {
            KeyValues kv = cache.update(0, manager.randomNormal(new Shape(2, 4, 1, 8)),
                    manager.randomNormal(new Shape(2, 4, 1, 8)));
            assertTrue(both.takesDecodeKernel(q, kv, null, false));
            for (String property : new String[] {FewRowProduct.SWITCH, DecodeAttention.SWITCH}) {
                System.setProperty(KernelSwitches.PROPERTY, property);
                try {
                    CpuKernels off = (CpuKernels) Kernels.forModel(pytorch, Device.cpu(), DataType.FLOAT32);
                    boolean fewRowsOff = property.equals(FewRowProduct.SWITCH);
                    assertEquals(!fewRowsOff, off.fewRowProduct(), property);
                    assertEquals(fewRowsOff, off.takesDecodeKernel(q, kv, null, false), property);
                } finally {
                    System.clearProperty(KernelSwitches.PROPERTY);
                }
            }
        }
    }

    /** Notes, for each attention of a model, whether the CPU kernels take the decode kernel. */
    private static final class Recording extends ForwardingKernels {

        private final CpuKernels cpu;
        private final List<Boolean> decodeKernel = new ArrayList<>();

        Recording(CpuKernels cpu) {
            super(cpu);
            this.cpu = cpu;
        }

        @Override
        public NDArray attend(
                NDArray q, KeyValues kv, NDArray mask, AttentionScores scores, float dropout, boolean training) {
            decodeKernel.add(cpu.takesDecodeKernel(q, kv, mask, training));
            return cpu.attend(q, kv, mask, scores, dropout, training);
        }
    }

    @Test
    void aModelsDecodeStepsTakeTheDecodeKernelAndItsPrefillTheEngine() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
        CausalLmBlock model = model();
        Recording recording = new Recording(new CpuKernels(true, true));
        model.useKernels(recording);
        try (KvCache cache = model.newCache(manager, 3, 8)) {
            NDManager prefill = manager.newSubManager();
            model.forward(null, prefill.create(new long[] {1, 2, 3, 4, 5, 6}, new Shape(3, 2)), null, null,
                    cache, true, false);
            model.kernels().closeStep(prefill);
            assertEquals(List.of(false, false), recording.decodeKernel, "a prefill has several queries");
            recording.decodeKernel.clear();
            for (int i = 0; i < 2; i++) {
                NDManager step = manager.newSubManager();
                model.forward(null, step.create(new long[] {7, 8, 9}, new Shape(3, 1)), null, null, cache, true,
                        false);
                model.kernels().closeStep(step);
            }
        }
        assertEquals(List.of(true, true, true, true), recording.decodeKernel, "two decode steps of two layers");
    }

    /**
     * Gemma's decode steps take the decode kernel: Gemma 3's layers (scores scaled by
     * query_pre_attn_scalar, windowed ones over their ring) and Gemma 2's soft-capped layers.
     */
    @ParameterizedTest
    @ValueSource(strings = {"gemma2", "gemma3_text"})
    void gemmaDecodeStepsTakeTheDecodeKernel(String family) throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
        String json = "{\"model_type\": \"" + family + "\", \"num_hidden_layers\": 2, \"vocab_size\": 40,"
                + " \"hidden_size\": 32, \"intermediate_size\": 48, \"num_attention_heads\": 4,"
                + " \"num_key_value_heads\": 2, \"head_dim\": 16, \"max_position_embeddings\": 32,"
                + " \"sliding_window\": 2, \"sliding_window_pattern\": 2, \"query_pre_attn_scalar\": 24}";
        LlamaModel model = new LlamaModel(LlamaConfig.parse(ConfigJson.of(null, JsonParser.parseString(json).getAsJsonObject())));
        model.initialize(manager, DataType.FLOAT32, new Shape(1, 4));
        Recording recording = new Recording(new CpuKernels(true, true));
        model.useKernels(recording);
        try (KvCache cache = model.newCache(manager, 3, 8)) {
            model.forward(null, manager.create(new long[] {1, 2, 3, 4, 5, 6}, new Shape(3, 2)), null, null,
                    cache, true, false);
            recording.decodeKernel.clear();
            for (int i = 0; i < 2; i++) { // past the window of 2
                NDManager step = manager.newSubManager();
                model.forward(null, step.create(new long[] {7, 8, 9}, new Shape(3, 1)), null, null, cache, true,
                        false);
                model.kernels().closeStep(step);
            }
        }
        assertEquals(List.of(true, true, true, true), recording.decodeKernel, "two decode steps of two layers");
    }
}
