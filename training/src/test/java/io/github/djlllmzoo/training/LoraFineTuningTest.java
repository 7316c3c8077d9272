package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.training.dataset.RandomAccessDataset;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.LoraConfig;
import io.github.djlllmzoo.zoo.LocalModel;
import io.github.djlllmzoo.zoo.PeftAdapter;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LoraFineTuningTest {

    private static final int VOCAB = 12;
    private static final LoraConfig LORA = new LoraConfig(8, 16, 0.05f, List.of("c_attn", "c_proj", "c_fc"));
    /** Without dropout, whose masks a resumed run draws from another seed, as the base model has none. */
    private static final LoraConfig DETERMINISTIC = new LoraConfig(8, 16, 0, List.of("c_attn", "c_proj", "c_fc"));
    private static final long[] PROMPT = {3, 8, 1};

    @TempDir Path temp;

    /** A toy domain: each token is the one before it plus 5 (mod 12), from a random start per record. */
    private static PackedTextDataset toyDomain(int records, int length, long seed) {
        Random random = new Random(seed);
        int[] tokens = new int[records * length + 1];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = i % length == 0 ? random.nextInt(VOCAB) : (tokens[i - 1] + 5) % VOCAB;
        }
        return FineTunerTest.packed(tokens, length);
    }

    @Test
    void loraLearnsAToyDomainWhileEveryBaseWeightStaysBitIdentical() throws Exception {
        Path source = TinyModels.checkpoint(temp.resolve("base"), TinyModels.config(VOCAB, 16, 32, 2, 2), 3);
        HeldOutSplit split = HeldOutSplit.of(toyDomain(48, 8, 4), 0.25);
        Path out = temp.resolve("adapter");
        FineTuneSettings settings =
                FineTuneSettings.builder().steps(60).batchSize(4).sequenceLength(8).learningRate(2e-2f)
                        .warmupSteps(4).weightDecay(0).evalEvery(0).logEvery(20).build();
        float[] trainedLogits;
        try (LocalModel model = LocalModel.load(source)) {
            Map<String, float[]> before = baseWeights(model);
            FineTuneResult result =
                    FineTuner.builder().setModel(model.model()).setTrainData(split.train())
                            .optEvalData(split.eval()).optSettings(settings)
                            .optLora(LORA, "tiny-base").optCheckpoints(out, source).build().run();
            double initial = result.initialEval().value();
            double last = result.finalEval().value();
            assertTrue(last < 0.75 * initial, "held-out perplexity " + initial + " -> " + last);
            Map<String, float[]> after = baseWeights(model);
            for (String name : before.keySet()) {
                assertArrayEquals(before.get(name), after.get(name), 0f, name);
            }
            trainedLogits = logits(model);
        }
        assertTrue(PeftAdapter.isAdapter(out));
        assertFalse(Files.exists(out.resolve("model.safetensors")), "a LoRA run does not copy the base");
        assertEquals(60, TrainerState.read(out).globalStep());
        try (SafeTensorsReader moments = SafeTensorsReader.open(out.resolve(TrainingCheckpoint.OPTIMIZER_FILE))) {
            assertEquals(4 * 2 * 4, moments.tensors().size(), "two moments of A and B of 4 projections x 2 layers");
            for (String name : moments.tensors().keySet()) {
                assertTrue(name.contains(".lora_A.") || name.contains(".lora_B."), name);
            }
        }
        try (LocalModel model = LocalModel.load(source)) {
            float[] base = logits(model);
            model.attachAdapter(out, LoraAdapter.DEFAULT);
            assertArrayEquals(trainedLogits, logits(model), 0f, "the saved adapter gives the trained logits");
            assertFalse(java.util.Arrays.equals(base, trainedLogits));
        }
    }

    @Test
    void aResumedLoraRunEndsWithTheAdapterOfAnUninterruptedOne() throws Exception {
        Path source = TinyModels.checkpoint(temp.resolve("source"), TinyModels.config(VOCAB, 16, 32, 2, 2), 6);
        PackedTextDataset data = toyDomain(24, 8, 7);
        FineTuneSettings settings =
                FineTuneSettings.builder().steps(6).batchSize(2).sequenceLength(8).learningRate(5e-3f)
                        .warmupSteps(2).evalEvery(0).saveEvery(3).logEvery(3).build();
        Path whole = temp.resolve("whole");
        try (LocalModel model = LocalModel.load(source)) {
            FineTuner.builder().setModel(model.model()).setTrainData(data).optSettings(settings)
                    .optLora(DETERMINISTIC, "b").optCheckpoints(whole, source).build().run();
        }
        Path out = temp.resolve("run");
        try (LocalModel model = LocalModel.load(source)) {
            RandomAccessDataset crashing = new FineTunerTest.FailingAfter(data, 3 * settings.batchSize());
            FineTuner tuner =
                    FineTuner.builder().setModel(model.model()).setTrainData(crashing).optSettings(settings)
                            .optLora(DETERMINISTIC, "b").optCheckpoints(out, source).build();
            assertThrows(IllegalStateException.class, tuner::run);
        }
        assertEquals(3, TrainerState.read(out).globalStep());
        try (LocalModel model = LocalModel.load(source)) {
            FineTuneResult result =
                    FineTuner.builder().setModel(model.model()).setTrainData(data).optSettings(settings)
                            .optLora(DETERMINISTIC, "b").optCheckpoints(out, source).optResumeFrom(out).build().run();
            assertEquals(3, result.startStep());
            assertEquals(6, result.finalStep());
        }
        Map<String, float[]> uninterrupted = tensors(whole.resolve(PeftAdapter.WEIGHTS));
        Map<String, float[]> resumed = tensors(out.resolve(PeftAdapter.WEIGHTS));
        assertEquals(uninterrupted.keySet(), resumed.keySet());
        FineTunerTest.assertSameWeightsUpToRounding(uninterrupted, resumed, settings);
        try (LocalModel model = LocalModel.load(source)) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> FineTuner.builder().setModel(model.model())
                            .setTrainData(data).optSettings(settings.toBuilder().steps(8).build())
                            .optLora(new LoraConfig(4, 16, 0.05f, List.of("c_attn")), "b")
                            .optCheckpoints(out, source).optResumeFrom(out).build().run());
            assertTrue(e.getMessage().contains("rank=4"), e.getMessage());
        }
    }

    private static Map<String, float[]> baseWeights(LocalModel model) {
        Map<String, float[]> out = new LinkedHashMap<>();
        model.block().namedParameters().forEach((name, p) -> out.put(name, p.getArray().toFloatArray()));
        return out;
    }

    private static Map<String, float[]> tensors(Path file) throws Exception {
        Map<String, float[]> out = new LinkedHashMap<>();
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            for (String name : reader.tensors().keySet()) {
                out.put(name, reader.toFloatArray(name));
            }
        }
        return out;
    }

    private static float[] logits(LocalModel model) {
        try (KvCache cache = model.block().newCache(model.model().getNDManager(), 1, 4)) {
            return model.generator().nextLogits(PROMPT, cache);
        }
    }
}
