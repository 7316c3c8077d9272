package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.DecoderModels;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.Gpt2Model;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class CompressedModelTest extends ManagedArraysTest {

    private static final int TEXT = 256;
    private static final int VOCAB = 512;

    /** The engine's seed for the test model's weights, set before each model is drawn. */
    private static final int SEED = 1;

    /**
     * A Llama of 4 layers whose projections are initialized as checkpoints' are, std 0.02, drawn
     * from the engine's generator seeded with {@code seed} (so no earlier test's draws change them).
     */
    private CausalLmBlock llama(int seed) throws Exception {
        JsonObject json = JsonParser.parseString(
                        "{\"model_type\": \"llama\", \"num_hidden_layers\": 4, \"hidden_size\": 256,"
                                + " \"intermediate_size\": 704, \"num_attention_heads\": 8,"
                                + " \"num_key_value_heads\": 4, \"max_position_embeddings\": 320,"
                                + " \"tie_word_embeddings\": false}")
                .getAsJsonObject();
        json.addProperty("vocab_size", VOCAB);
        CausalLmBlock model = DecoderModels.create(LlamaConfig.parse(ConfigJson.of(null, json)));
        manager.getEngine().setRandomSeed(seed);
        model.initialize(manager, DataType.FLOAT32, new Shape(1, 4));
        return model;
    }

    private CausalLmBlock llama() throws Exception {
        return llama(SEED);
    }

    private static long[] text() {
        Random random = new Random(256);
        long[] ids = new long[TEXT];
        for (int i = 0; i < TEXT; i++) {
            ids[i] = random.nextInt(VOCAB);
        }
        return ids;
    }

    /** Log-probabilities of each next token of {@code ids} from logits (T, V), T = ids.length - 1. */
    private static double[] nextTokenLogProbs(float[] logits, long[] ids) {
        double[] logProbs = new double[ids.length - 1];
        for (int t = 0; t < logProbs.length; t++) {
            double max = Double.NEGATIVE_INFINITY;
            for (int v = 0; v < VOCAB; v++) {
                max = Math.max(max, logits[t * VOCAB + v]);
            }
            double sum = 0;
            for (int v = 0; v < VOCAB; v++) {
                sum += Math.exp(logits[t * VOCAB + v] - max);
            }
            logProbs[t] = logits[t * VOCAB + (int) ids[t + 1]] - max - Math.log(sum);
        }
        return logProbs;
    }

    /**
     * The whole text in one cache-free pass: prefill products, by the compressed GEMM where the CPU
     * has its instruction, else the engine's over widened weights.
     */
    private static float[] prefillLogits(CausalLmBlock model, NDManager manager, long[] ids) {
        try (NDManager step = manager.newSubManager()) {
            NDArray input = step.create(ids, new Shape(1, ids.length));
            return model.forward(null, input, null, null, null, false, false).toFloatArray();
        }
    }

    /** The text one token a step over a KV cache: decode products, the compressed kernel's. */
    private static float[] decodeLogits(CausalLmBlock model, NDManager manager, long[] ids) {
        float[] logits = new float[ids.length * VOCAB];
        try (KvCache cache = model.newCache(manager, 1, ids.length)) {
            for (int t = 0; t < ids.length; t++) {
                NDManager step = manager.newSubManager();
                NDArray input = step.create(new long[] {ids[t]}, new Shape(1, 1));
                float[] row = model.forward(null, input, null, null, cache, true, false).toFloatArray();
                System.arraycopy(row, 0, logits, t * VOCAB, VOCAB);
                model.kernels().closeStep(step);
            }
        }
        return logits;
    }

    private static double meanAbsoluteDifference(double[] a, double[] b) {
        double sum = 0;
        for (int i = 0; i < a.length; i++) {
            sum += Math.abs(a[i] - b[i]);
        }
        return sum / a.length;
    }

    /**
     * The bounds are issue 21's: what a compressed checkpoint may cost in next-token log-probability
     * against its float32 weights, over a 256-token text, by the prefill path and by decode steps
     * through each compressed kernel: the widening one, and where the CPU has them the one on
     * AVX512_VNNI (whose int8 input adds its rounding) or AVX512_BF16.
     */
    @ParameterizedTest
    @CsvSource({"INT8, 0.01", "BFLOAT16, 0.002", "FLOAT16, 0.002"})
    void aCompressedModelsNextTokenLogProbsStayWithinTheFormatsBoundOfFloat32(WeightFormat format, double bound)
            throws Exception {
        CausalLmBlock model = llama();
        long[] ids = text();
        double[] float32 = nextTokenLogProbs(prefillLogits(model, manager, ids), ids);
        model.compressWeights(format);
        double prefill = meanAbsoluteDifference(float32, nextTokenLogProbs(prefillLogits(model, manager, ids), ids));
        assertTrue(prefill < bound, format + " prefill: mean |logprob difference| " + prefill + " nats");
        double widened = withoutCompressedGemm(() -> {
            model.useKernels(new CpuKernels(true, true));
            return meanAbsoluteDifference(float32, nextTokenLogProbs(prefillLogits(model, manager, ids), ids));
        });
        assertTrue(widened < bound, format + " prefill over widened weights: mean |logprob difference| " + widened);
        int chosen = CompressedProduct.dotProducts();
        try {
            for (int dot : new int[] {0, NativeKernels.loaded() ? CompressedProduct.features() : 0}) {
                CompressedProduct.useDotProducts(dot);
                double decode =
                        meanAbsoluteDifference(float32, nextTokenLogProbs(decodeLogits(model, manager, ids), ids));
                assertTrue(decode < bound,
                        format + " decode (dot products " + dot + "): mean |logprob difference| " + decode + " nats");
                assertTrue(decode > 0, "the weights were compressed");
            }
        } finally {
            CompressedProduct.useDotProducts(chosen);
        }
        assertTrue(prefill > 0, "the weights were compressed");
    }

    /**
     * Several prompts' chunks prefilled in one pass, {@code (R, T)}, give each chunk's logits bit for
     * bit as its own {@code (1, T)} pass does, where the compressed product takes the int8 GEMM: its
     * rows depend on their own input alone, and so do the norms, the rotary embedding and the
     * attention the layers run around it. So a decode loop may stack joining prompts' chunks and
     * every sequence still computes what it computes alone (float32 weights go through the engine's
     * GEMM, whose sums may be cut otherwise for more rows, and are left out).
     */
    @ParameterizedTest
    @CsvSource({"INT8", "INT4", "INT6", "Q4_K"})
    void chunksStackedInOnePassGiveEachChunksLogitsAsItsOwnPassDoes(WeightFormat format) throws Exception {
        assumeTrue(CompressedGemm.takes(format), "no " + format + " product kernel on this CPU");
        CausalLmBlock model = llama();
        model.compressWeights(format);
        model.useKernels(new CpuKernels(true, true));
        int chunks = 3;
        int t = 40;
        long[] ids = Arrays.copyOf(text(), chunks * t);
        float[] stacked;
        try (NDManager pass = manager.newSubManager();
                KvCache cache = model.newCache(pass, chunks, t)) {
            stacked = model.forward(null, pass.create(ids, new Shape(chunks, t)), null, null, cache, false, false)
                    .toFloatArray(); // (R, T, V)
        }
        for (int c = 0; c < chunks; c++) {
            float[] alone;
            try (NDManager pass = manager.newSubManager();
                    KvCache cache = model.newCache(pass, 1, t)) {
                long[] own = Arrays.copyOfRange(ids, c * t, (c + 1) * t);
                alone = model.forward(null, pass.create(own, new Shape(1, t)), null, null, cache, false, false)
                        .toFloatArray(); // (1, T, V)
            }
            assertArrayEquals(alone, Arrays.copyOfRange(stacked, c * t * VOCAB, (c + 1) * t * VOCAB), 0f,
                    format + " chunk " + c);
        }
    }

    /**
     * A prompt's positions come out the same bit for bit whether it is prefilled in one pass or in
     * chunks of more than 8 rows through the cache ({@link CpuKernels#prefillSplitsExactly}): each row of a compressed product depends on that row alone, and the
     * prefill attention reads a position's earlier keys from the cache in the same order however the
     * passes split them. So the decode loop may take several prefix-cache blocks' worth of a prompt
     * in one pass and still reuse any block boundary of it exactly.
     */
    @ParameterizedTest
    @EnumSource(value = WeightFormat.class, names = {"INT8", "INT4", "INT6", "Q4_K"})
    void aPromptPrefilledInChunksGivesTheLogitsOfOnePass(WeightFormat format) throws Exception {
        assumeTrue(CompressedGemm.takes(format), "no " + format + " product kernel on this CPU");
        CausalLmBlock model = llama();
        model.compressWeights(format);
        model.useKernels(new CpuKernels(true, true));
        int[] chunks = {16, 9, 24, 17, 12}; // more than the decode kernels' 8 rows: the GEMM's
        int length = Arrays.stream(chunks).sum();
        long[] ids = Arrays.copyOf(text(), length);
        float[] whole;
        try (NDManager pass = manager.newSubManager();
                KvCache cache = model.newCache(pass, 1, length)) {
            whole = model.forward(null, pass.create(ids, new Shape(1, length)), null, null, cache, false, false)
                    .toFloatArray(); // (1, T, V)
        }
        try (NDManager pass = manager.newSubManager();
                KvCache cache = model.newCache(pass, 1, length)) {
            int at = 0;
            for (int t : chunks) {
                long[] own = Arrays.copyOfRange(ids, at, at + t);
                float[] chunk = model.forward(null, pass.create(own, new Shape(1, t)), null, null, cache, false, false)
                        .toFloatArray(); // (1, t, V)
                assertArrayEquals(Arrays.copyOfRange(whole, at * VOCAB, (at + t) * VOCAB), chunk, 0f,
                        format + " positions " + at + " to " + (at + t));
                at += t;
            }
        }
    }

    /**
     * The bound holds for every model drawn, not only the one above: the mean |logprob difference|
     * of a bfloat16 prefill moves with the draw (0.00112-0.00172 nats over seeds 1-12,
     * docs/PERFORMANCE.md), so one seed alone says little about the margin. Rounding the input of
     * every product to bfloat16 as well (llama.cpp's BF16 product) went over the bound on 2 of those
     * 12 seeds.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
    void aBfloat16PrefillStaysWithinTheBoundOnEveryDrawnModel(int seed) throws Exception {
        CausalLmBlock model = llama(seed);
        long[] ids = text();
        double[] float32 = nextTokenLogProbs(prefillLogits(model, manager, ids), ids);
        model.compressWeights(WeightFormat.BFLOAT16);
        double prefill = meanAbsoluteDifference(float32, nextTokenLogProbs(prefillLogits(model, manager, ids), ids));
        assertTrue(prefill < 0.002, "seed " + seed + ": mean |logprob difference| " + prefill + " nats");
        assertTrue(prefill > 0, "the weights were compressed");
    }

    /** {@code task}'s value computed by kernels made with {@code -Dllmzoo.cpu.off=compressedGemm}. */
    private static double withoutCompressedGemm(java.util.function.DoubleSupplier task) {
        String before = System.getProperty(KernelSwitches.PROPERTY);
        System.setProperty(KernelSwitches.PROPERTY, CompressedGemm.SWITCH);
        try {
            return task.getAsDouble();
        } finally {
            if (before == null) {
                System.clearProperty(KernelSwitches.PROPERTY);
            } else {
                System.setProperty(KernelSwitches.PROPERTY, before);
            }
        }
    }

    /**
     * Decode steps through the widening kernel give the logits of the reference (the engine's
     * products of the widened weights) to float32 rounding along the model's path (the dot-product
     * kernels round the input too: their bound is the log-probability test's).
     */
    @ParameterizedTest
    @EnumSource(value = WeightFormat.class, names = {"INT8", "BFLOAT16", "FLOAT16", "INT4", "INT6"})
    void decodeStepsThroughTheWideningKernelGiveTheReferencesLogits(WeightFormat format) throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
        CausalLmBlock model = llama();
        model.compressWeights(format);
        long[] ids = Arrays.copyOf(text(), 24);
        model.useKernels(EngineKernels.INSTANCE);
        float[] reference = decodeLogits(model, manager, ids);
        model.useKernels(new CpuKernels(true, true));
        int chosen = CompressedProduct.dotProducts();
        float[] kernel;
        try {
            CompressedProduct.useDotProducts(0);
            kernel = decodeLogits(model, manager, ids);
        } finally {
            CompressedProduct.useDotProducts(chosen);
        }
        assertArrayEquals(reference, kernel, RoundingBound.ofLogits(model.config(), ids.length, reference));
    }

    @Test
    void aGpt2ModelsConv1DWeightsCompressAsOutInAndGiveTheFloatModelsLogitsToRounding() {
        Gpt2Config config = new Gpt2Config(97, 40, 64, 2, 4, 256, 1e-5f, 0f, 0f, 0f, 0, List.of(0), true);
        Gpt2Model model = new Gpt2Model(config);
        model.initialize(manager, DataType.FLOAT32, new Shape(1, 4));
        long[] ids = {5, 17, 3, 90, 41, 8};
        float[] float32 = decodeLogits97(model, ids);
        model.compressWeights(WeightFormat.BFLOAT16);
        float[] bf16 = decodeLogits97(model, ids);
        for (int i = 0; i < float32.length; i++) {
            // bfloat16 keeps 8 significant bits: each weight within 2^-9 relative, the logits of
            // this small model far closer than their spread
            assertTrue(Math.abs(float32[i] - bf16[i]) < 0.05, "logit " + i + ": " + float32[i] + " vs " + bf16[i]);
        }
    }

    private float[] decodeLogits97(CausalLmBlock model, long[] ids) {
        try (NDManager step = manager.newSubManager()) {
            return model.forward(null, step.create(ids, new Shape(1, ids.length)), null, null, null, false, false)
                    .toFloatArray();
        }
    }

    @Test
    void trainingAModelHeldCompressedIsRefusedNamingItsFormatAndTheWayOut() throws Exception {
        CausalLmBlock model = llama();
        model.compressWeights(WeightFormat.INT8);
        try (NDManager step = manager.newSubManager()) {
            NDArray input = step.create(new long[] {1, 2, 3}, new Shape(1, 3));
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> model.forward(null, input, null, null, null, false, true));
            assertTrue(e.getMessage().contains("int8") && e.getMessage().contains("float32"), e.getMessage());
        }
    }

    @Test
    void compressingFreesTheFloatMatricesAndKeepsTheNorms() throws Exception {
        CausalLmBlock model = llama();
        model.compressWeights(WeightFormat.BFLOAT16);
        assertFalse(model.namedParameters().get("layers.0.mlp.down_proj.weight").isInitialized(), "projection freed");
        assertFalse(model.namedParameters().get("lm_head.weight").isInitialized(), "untied head freed");
        assertFalse(model.namedParameters().get("embed_tokens.weight").isInitialized(), "the embedding freed");
        assertTrue(model.namedParameters().get("norm.weight").isInitialized(), "the norms kept");
    }
}
