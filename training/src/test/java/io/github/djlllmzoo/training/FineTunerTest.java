package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Record;
import ai.djl.util.Progress;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.zoo.CheckpointWeights;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class FineTunerTest {

    private static final Gpt2Config CONFIG = TinyModels.config(12, 16, 32, 2, 2);

    @TempDir Path temp;

    static int[] randomTokens(int count, int vocab, long seed) {
        Random random = new Random(seed);
        int[] tokens = new int[count];
        for (int i = 0; i < count; i++) {
            tokens[i] = random.nextInt(vocab);
        }
        return tokens;
    }

    static PackedTextDataset packed(int[] tokens, int sequenceLength) {
        return PackedTextDataset.builder().setTokens(tokens).setSequenceLength(sequenceLength).build();
    }

    /**
     * Asserts that two runs of the same steps on the same data end with the same weights, up to
     * what rounding alone lets them differ by: their gradients differ by a relative {@code
     * RoundingBound} of the sums behind an entry (a path through the model for each token of a
     * batch), which moves AdamW's normalized step m/(sqrt(v) + eps) by twice that times its bound
     * (1 - beta1) / sqrt(1 - beta2) = 3.16 (Kingma and Ba, section 2.1), on every step.
     *
     * <p>The key bias is left out: softmax ignores a constant added to every key, so its gradient is
     * rounding noise alone, which AdamW divides by its epsilon of 1e-8 into steps of any size up to
     * the bound.
     */
    static void assertSameWeightsUpToRounding(
            Map<String, float[]> expected, Map<String, float[]> actual, FineTuneSettings settings) {
        long tokensPerStep = (long) settings.batchSize() * settings.sequenceLength();
        double gradientRounding =
                RoundingBound.ofSums(RoundingBound.pathLength(CONFIG, settings.sequenceLength()) * tokensPerStep, 1);
        double tolerance = settings.steps() * settings.learningRate() * 2 * gradientRounding * 3.16;
        int width = CONFIG.hiddenSize();
        for (String name : expected.keySet()) {
            float[] want = expected.get(name);
            float[] got = actual.get(name);
            assertEquals(want.length, got.length, name);
            boolean fusedAttentionBias = name.endsWith("attn.c_attn.bias"); // (3 * width): query, key, value
            for (int i = 0; i < want.length; i++) {
                if (!(fusedAttentionBias && i >= width && i < 2 * width)) {
                    assertEquals(want[i], got[i], tolerance, name + "[" + i + "]");
                }
            }
        }
    }

    private static Map<String, float[]> weights(LocalModel model) {
        Map<String, float[]> out = new LinkedHashMap<>();
        model.block().namedParameters().forEach((name, p) -> out.put(name, p.getArray().toFloatArray()));
        return out;
    }

    @Test
    void aTinyModelOverfitsATinyDatasetToNearZeroLoss() throws Exception {
        Path dir = TinyModels.checkpoint(temp.resolve("tiny"), CONFIG, 1);
        int[] tokens = randomTokens(4 * 8 + 1, CONFIG.vocabSize(), 2);
        for (int r = 0; r < 4; r++) {
            tokens[r * 8] = r; // distinct first tokens: every next token is determined by its context
        }
        PackedTextDataset data = packed(tokens, 8);
        try (LocalModel model = LocalModel.load(dir)) {
            FineTuneSettings settings =
                    FineTuneSettings.builder()
                            .steps(150).batchSize(4).sequenceLength(8).learningRate(1e-2f).warmupSteps(10)
                            .weightDecay(0).evalEvery(0).logEvery(50).build();
            FineTuneResult result =
                    FineTuner.builder().setModel(model.model()).setTrainData(data).optSettings(settings).build().run();
            Perplexity after = Perplexity.evaluate(model.block(), data, model.model().getNDManager(), 4);
            assertEquals(150, result.finalStep());
            assertEquals(4 * 8, after.tokens());
            assertTrue(after.meanLoss() < 0.05, "loss after overfitting: " + after.meanLoss());
        }
    }

    @Test
    void theCheckpointLoadsThroughTheZooWithTheTrainedLogitsAndPlainSafetensorsBytes() throws Exception {
        Path source = TinyModels.checkpoint(temp.resolve("source"), CONFIG, 3);
        Path out = temp.resolve("out");
        PackedTextDataset data = packed(randomTokens(10 * 8 + 1, CONFIG.vocabSize(), 4), 8);
        StringWriter progress = new StringWriter();
        try (LocalModel model = LocalModel.load(source)) {
            FineTuner.builder()
                    .setModel(model.model())
                    .setTrainData(data)
                    .optEvalData(packed(randomTokens(3 * 8 + 1, CONFIG.vocabSize(), 5), 8))
                    .optSettings(FineTuneSettings.builder().steps(4).batchSize(2).sequenceLength(8).learningRate(1e-2f).evalEvery(2).saveEvery(2).logEvery(1).build())
                    .optCheckpoints(out, source)
                    .optProgress(new PrintWriter(progress))
                    .build()
                    .run();
            String log = progress.toString();
            assertTrue(log.contains("step 4/4  loss ") && log.contains("tokens/s") && log.contains("lr "), log);
            assertTrue(log.contains("step 2/4  eval_loss ") && log.contains("eval_ppl"), log);
            assertTrue(log.contains("step 2/4  saved") && log.contains("step 4/4  saved"), log);

            try (LocalModel loaded = LocalModel.load(out);
                    NDManager scope = NDManager.newBaseManager("PyTorch")) {
                NDArray ids = scope.create(new long[] {3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, new Shape(2, 5));
                float[] trained = model.block().forward(null, ids, null, null, null, false, false).toFloatArray();
                float[] reloaded = loaded.block().forward(null, ids, null, null, null, false, false).toFloatArray();
                assertArrayEquals(trained, reloaded, 0f, "the zoo gives the trained model's logits");
                assertTrue(loaded.hasTokenizer(), "the tokenizer is copied");
            }
            assertEquals(Files.readString(source.resolve("config.json")), Files.readString(out.resolve("config.json")));
            assertEquals(4, TrainerState.read(out).globalStep());
            assertTrue(Files.isRegularFile(out.resolve("generation_config.json")));
            assertTrue(Files.isRegularFile(out.resolve(TrainingCheckpoint.OPTIMIZER_FILE)));

            Map<String, float[]> stored = parseSafetensorsByHand(out.resolve("model.safetensors"));
            Map<String, Parameter> parameters = model.block().namedParameters();
            assertEquals(parameters.size(), stored.size(), "one tensor per parameter, the tied head not stored");
            for (Map.Entry<String, Parameter> e : parameters.entrySet()) {
                float[] values = stored.get("transformer." + e.getKey());
                assertNotNull(values, "transformer." + e.getKey() + " is in the file");
                assertArrayEquals(e.getValue().getArray().toFloatArray(), values, 0f, e.getKey());
            }
        }
        try (Stream<Path> siblings = Files.list(temp)) {
            assertTrue(siblings.noneMatch(p -> p.getFileName().toString().startsWith(".")), "no temporary directory is left");
        }
    }

    /** The checkpoint saved in {@code out} computes the trained model's logits exactly. */
    private static void assertReloadsWithTheSameLogits(LocalModel model, Path out) throws Exception {
        try (LocalModel loaded = LocalModel.load(out);
                NDManager scope = NDManager.newBaseManager("PyTorch")) {
            NDArray ids = scope.create(new long[] {3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, new Shape(2, 5));
            assertArrayEquals(
                    model.block().forward(null, ids, null, null, null, false, false).toFloatArray(),
                    loaded.block().forward(null, ids, null, null, null, false, false).toFloatArray(),
                    0f);
        }
    }

    @ParameterizedTest
    @CsvSource({
        "qwen2, model.layers.1.self_attn.k_proj.bias, model.layers.1.self_attn.o_proj.bias",
        "qwen3, model.layers.1.self_attn.k_norm.weight, model.layers.1.mlp.gate_proj.bias",
        "phi3, model.layers.1.self_attn.qkv_proj.weight, model.layers.1.mlp.up_proj.weight",
        "phi3, model.layers.1.mlp.gate_up_proj.weight, model.layers.1.self_attn.q_proj.weight",
        "gemma, model.layers.1.post_attention_layernorm.weight, model.layers.1.pre_feedforward_layernorm.weight",
        "gemma2, model.layers.1.post_feedforward_layernorm.weight, model.layers.1.self_attn.q_norm.weight",
        "gemma3_text, model.layers.1.self_attn.k_norm.weight, model.layers.1.mlp.gate_up_proj.weight"
    })
    void eachLlamaShapedFamilyTrainsAndItsCheckpointKeepsItsTensorNames(
            String modelType, String present, String absent) throws Exception {
        String json = TinyModels.llamaJson(12, false).replace("\"llama\"", "\"" + modelType + "\"");
        if (modelType.startsWith("gemma")) {
            // a window shorter than the training sequences (Gemma 2 and 3 slide, Gemma ignores it)
            json = json.replace("\"max_position_embeddings\"", "\"sliding_window\": 4, \"max_position_embeddings\"");
        }
        Path source = TinyModels.checkpoint(temp.resolve(modelType), json, 12);
        Path out = temp.resolve(modelType + "-out");
        PackedTextDataset data = packed(randomTokens(6 * 8 + 1, 12, 13), 8);
        try (LocalModel model = LocalModel.load(source)) {
            Map<String, float[]> before = weights(model);
            FineTuner.builder().setModel(model.model()).setTrainData(data).optCheckpoints(out, source)
                    .optSettings(FineTuneSettings.builder().steps(3).batchSize(2).sequenceLength(8).learningRate(1e-2f).evalEvery(0).build())
                    .build().run();
            Map<String, float[]> after = weights(model);
            for (String name : before.keySet()) {
                assertFalse(java.util.Arrays.equals(before.get(name), after.get(name)), name + " trains");
            }
            Map<String, float[]> stored = parseSafetensorsByHand(out.resolve("model.safetensors"));
            assertTrue(stored.containsKey(present), present + " in " + stored.keySet());
            assertFalse(stored.containsKey(absent), absent + " in " + stored.keySet());
            assertReloadsWithTheSameLogits(model, out);
        }
    }

    @Test
    void aLlamaModelTrainsAndItsCheckpointKeepsLlamaTensorNames() throws Exception {
        Path source = TinyModels.checkpoint(temp.resolve("llama"), TinyModels.llamaJson(12, false), 12);
        Path out = temp.resolve("llama-out");
        PackedTextDataset data = packed(randomTokens(6 * 8 + 1, 12, 13), 8);
        try (LocalModel model = LocalModel.load(source)) {
            Map<String, float[]> before = weights(model);
            FineTuner.builder().setModel(model.model()).setTrainData(data).optCheckpoints(out, source)
                    .optSettings(FineTuneSettings.builder().steps(3).batchSize(2).sequenceLength(8).learningRate(1e-2f).trainLastLayers(1).evalEvery(0).build())
                    .build().run();
            Map<String, float[]> after = weights(model);
            for (String name : before.keySet()) {
                boolean trains = name.startsWith("layers.1.") || name.startsWith("norm.") || name.startsWith("lm_head.");
                assertEquals(trains, !java.util.Arrays.equals(before.get(name), after.get(name)), name);
            }
            Map<String, float[]> stored = parseSafetensorsByHand(out.resolve("model.safetensors"));
            assertTrue(stored.containsKey("lm_head.weight") && stored.containsKey("model.embed_tokens.weight")
                    && stored.containsKey("model.layers.1.self_attn.q_proj.weight"), stored.keySet().toString());
            assertReloadsWithTheSameLogits(model, out);
        }
    }

    /**
     * Reads a safetensors file with nothing but the format's definition: an 8-byte little-endian
     * header length, a JSON header of {dtype, shape, data_offsets} per tensor, then the data.
     */
    private static Map<String, float[]> parseSafetensorsByHand(Path file) throws IOException {
        ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        long headerLength = bytes.getLong(0);
        String header = new String(bytes.array(), 8, Math.toIntExact(headerLength), StandardCharsets.UTF_8);
        JsonObject json = JsonParser.parseString(header).getAsJsonObject();
        int dataStart = Math.toIntExact(8 + headerLength);
        assertEquals("pt", json.getAsJsonObject("__metadata__").get("format").getAsString());
        Map<String, float[]> out = new LinkedHashMap<>();
        long covered = 0;
        for (Map.Entry<String, JsonElement> e : json.entrySet()) {
            if (e.getKey().equals("__metadata__")) {
                continue;
            }
            JsonObject info = e.getValue().getAsJsonObject();
            assertEquals("F32", info.get("dtype").getAsString(), e.getKey());
            long elements = 1;
            for (JsonElement dim : info.getAsJsonArray("shape")) {
                elements *= dim.getAsLong();
            }
            long begin = info.getAsJsonArray("data_offsets").get(0).getAsLong();
            long end = info.getAsJsonArray("data_offsets").get(1).getAsLong();
            assertEquals(elements * 4, end - begin, e.getKey() + " offsets match its shape");
            float[] values = new float[Math.toIntExact(elements)];
            for (int i = 0; i < values.length; i++) {
                values[i] = bytes.getFloat(Math.toIntExact(dataStart + begin + 4L * i));
            }
            out.put(e.getKey(), values);
            covered += end - begin;
        }
        assertEquals(bytes.capacity() - dataStart, covered, "the tensors cover the data section exactly");
        return out;
    }

    @Test
    void aResumedRunEndsWithTheWeightsOfAnUninterruptedOne() throws Exception {
        Path source = TinyModels.checkpoint(temp.resolve("source"), CONFIG, 6);
        PackedTextDataset data = packed(randomTokens(12 * 8 + 1, CONFIG.vocabSize(), 7), 8);
        FineTuneSettings settings =
                FineTuneSettings.builder().steps(6).batchSize(2).sequenceLength(8).learningRate(5e-3f)
                        .warmupSteps(2).evalEvery(0).saveEvery(3).logEvery(3).build();

        Map<String, float[]> uninterrupted;
        try (LocalModel model = LocalModel.load(source)) {
            FineTuner.builder().setModel(model.model()).setTrainData(data).optSettings(settings).build().run();
            uninterrupted = weights(model);
        }

        Path out = temp.resolve("run");
        Map<String, float[]> atCrash;
        try (LocalModel model = LocalModel.load(source)) {
            // The data fails while fetching step 4's batch: the step-3 checkpoint must survive whole.
            RandomAccessDataset crashing = new FailingAfter(data, 3 * settings.batchSize());
            FineTuner tuner =
                    FineTuner.builder().setModel(model.model()).setTrainData(crashing).optSettings(settings)
                            .optCheckpoints(out, source).build();
            assertThrows(IllegalStateException.class, tuner::run);
        }
        assertEquals(3, TrainerState.read(out).globalStep());
        try (LocalModel saved = LocalModel.load(out)) {
            atCrash = weights(saved);
        }
        assertFalse(java.util.Arrays.equals(uninterrupted.get("wte.weight"), atCrash.get("wte.weight")));

        try (LocalModel model = LocalModel.load(out)) {
            assertArrayEquals(atCrash.get("h.1.mlp.c_fc.weight"), weights(model).get("h.1.mlp.c_fc.weight"), 0f);
            FineTuneResult result =
                    FineTuner.builder().setModel(model.model()).setTrainData(data).optSettings(settings)
                            .optCheckpoints(out, out).optResumeFrom(out).build().run();
            assertEquals(3, result.startStep());
            assertEquals(6, result.finalStep());
            assertSameWeightsUpToRounding(uninterrupted, weights(model), settings);
        }
        assertEquals(6, TrainerState.read(out).globalStep());
    }

    @Test
    void accumulatingMicroBatchesEqualsOneLargeBatch() throws Exception {
        Path source = TinyModels.checkpoint(temp.resolve("source"), CONFIG, 8);
        PackedTextDataset data = packed(randomTokens(16 * 8 + 1, CONFIG.vocabSize(), 9), 8);
        FineTuneSettings.Builder settings =
                FineTuneSettings.builder().steps(3).sequenceLength(8).learningRate(5e-3f).evalEvery(0).logEvery(3);
        FineTuneSettings largeBatch = settings.batchSize(4).gradAccum(1).build();
        Map<String, float[]> large;
        try (LocalModel model = LocalModel.load(source)) {
            FineTuner.builder().setModel(model.model()).setTrainData(data)
                    .optSettings(largeBatch).build().run();
            large = weights(model);
        }
        try (LocalModel model = LocalModel.load(source)) {
            FineTuner.builder().setModel(model.model()).setTrainData(data)
                    .optSettings(settings.batchSize(2).gradAccum(2).build()).build().run();
            assertSameWeightsUpToRounding(large, weights(model), largeBatch);
        }
    }

    @Test
    void trainingTheLastLayerLeavesTheEmbeddingsAndEarlierLayersUnchanged() throws Exception {
        Path source = TinyModels.checkpoint(temp.resolve("source"), CONFIG, 10);
        PackedTextDataset data = packed(randomTokens(8 * 8 + 1, CONFIG.vocabSize(), 11), 8);
        try (LocalModel model = LocalModel.load(source)) {
            Map<String, float[]> before = weights(model);
            FineTuner.builder().setModel(model.model()).setTrainData(data)
                    .optSettings(FineTuneSettings.builder().steps(3).batchSize(2).sequenceLength(8).learningRate(1e-2f).trainLastLayers(1).evalEvery(0).build())
                    .build().run();
            Map<String, float[]> after = weights(model);
            for (String name : before.keySet()) {
                boolean trains = name.startsWith("h.1.") || name.startsWith("ln_f.");
                assertEquals(trains, !java.util.Arrays.equals(before.get(name), after.get(name)),
                        name + (trains ? " should train" : " should stay frozen"));
            }
        }
    }

    /** A dataset whose records fail after a number of reads, like a crash mid-run. */
    static final class FailingAfter extends RandomAccessDataset {
        private final PackedTextDataset data;
        private final int limit;
        private int reads;

        FailingAfter(PackedTextDataset data, int limit) {
            super(PackedTextDataset.builder().setSampling(1, false));
            this.data = data;
            this.limit = limit;
        }

        @Override
        public Record get(NDManager manager, long index) throws IOException {
            if (reads++ >= limit) {
                throw new IOException("simulated failure while reading data");
            }
            return data.get(manager, index);
        }

        @Override
        protected long availableSize() {
            return data.size();
        }

        @Override
        public void prepare(Progress progress) {}
    }
}
