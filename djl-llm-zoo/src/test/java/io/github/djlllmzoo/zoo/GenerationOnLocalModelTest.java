package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.Gpt2Model;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.translators.GenerationTranslatorFactory;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The generation translators on checkpoints loaded from disk by {@link LocalModel}. */
class GenerationOnLocalModelTest {

    private static final GenerationTranslatorFactory FACTORY = new GenerationTranslatorFactory();

    private static long[] ids(JsonArray array) {
        long[] out = new long[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).getAsLong();
        }
        return out;
    }

    @Test
    void predictorGreedyReproducesTheGoldenContinuationAloneAndInABatch() throws Exception {
        Path dir = Paths.get(System.getProperty("llmzoo.testdata"), "golden", "gpt2-tiny");
        JsonObject golden =
                JsonParser.parseString(Files.readString(dir.resolve("golden.json"), StandardCharsets.UTF_8))
                        .getAsJsonObject();
        long[] prompt = ids(golden.getAsJsonArray("prompt_ids"));
        long[] expected = ids(golden.getAsJsonArray("greedy_ids"));
        GenerationConfig config =
                GenerationConfig.builder().maxNewTokens(expected.length).eosTokenIds(List.of()).build();
        try (LocalModel local = LocalModel.load(dir);
                Predictor<GenerationRequest, GenerationResult> predictor =
                        local.model()
                                .newPredictor(
                                        FACTORY.newInstance(
                                                GenerationRequest.class, GenerationResult.class, local.model(), Map.of()))) {
            GenerationResult alone = predictor.predict(GenerationRequest.ofIds(prompt, config));
            assertArrayEquals(expected, alone.tokenIds());
            assertNull(alone.text(), "the golden case has no tokenizer");
            long[] shorter = Arrays.copyOfRange(prompt, 4, prompt.length);
            List<GenerationResult> batch =
                    predictor.batchPredict(
                            List.of(GenerationRequest.ofIds(shorter, config), GenerationRequest.ofIds(prompt, config)));
            assertArrayEquals(expected, batch.get(1).tokenIds());
            assertArrayEquals(
                    predictor.predict(GenerationRequest.ofIds(shorter, config)).tokenIds(), batch.get(0).tokenIds());
        }
    }

    @Test
    void stringPredictorRunsOnACheckpointWrittenToDiskWithItsGenerationDefaults(@TempDir Path dir)
            throws Exception {
        String fixtures = System.getProperty("llmzoo.fixtures");
        Path tokenizer = fixtures == null ? null : Paths.get(fixtures, "gpt2-tokenizer");
        Assumptions.assumeTrue(tokenizer != null && Files.isDirectory(tokenizer), "no GPT-2 tokenizer fixture");
        writeRandomGpt2(dir);
        Files.copy(tokenizer.resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
        Files.writeString(
                dir.resolve("generation_config.json"),
                "{\"max_new_tokens\": 6, \"eos_token_id\": 50256}",
                StandardCharsets.UTF_8);
        try (LocalModel local = LocalModel.load(dir)) {
            Model model = local.model();
            String text;
            try (Predictor<String, String> predictor =
                    model.newPredictor(FACTORY.newInstance(String.class, String.class, model, Map.of()))) {
                text = predictor.predict("Once upon a time");
            }
            long[] greedy =
                    local.generator()
                            .generateGreedy(
                                    local.tokenizer().encode("Once upon a time"),
                                    GenerationConfig.builder().maxNewTokens(6).eosTokenIds(List.of(50256)).build())
                            .tokenIds();
            assertEquals(local.tokenizer().decode(greedy), text);
            try (Predictor<GenerationRequest, GenerationResult> predictor =
                    model.newPredictor(
                            FACTORY.newInstance(GenerationRequest.class, GenerationResult.class, model, Map.of()))) {
                assertArrayEquals(greedy, predictor.predict(GenerationRequest.of("Once upon a time")).tokenIds());
            }
            assertEquals(6, greedy.length, "generation_config.json's max_new_tokens is the default budget");
        }
    }

    enum Priority {
        LOW,
        HIGH
    }

    record Contact(Priority priority, boolean reply, Optional<Priority> escalation) {}

    record Ticket(Contact contact, Integer severity, short code) {}

    @Test
    void generateReturnsTheRecordOfItsDerivedSchema(@TempDir Path dir) throws Exception {
        String fixtures = System.getProperty("llmzoo.fixtures");
        Path tokenizer = fixtures == null ? null : Paths.get(fixtures, "gpt2-tokenizer");
        Assumptions.assumeTrue(tokenizer != null && Files.isDirectory(tokenizer), "no GPT-2 tokenizer fixture");
        writeRandomGpt2(dir, 512);
        Files.copy(tokenizer.resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
        try (LocalModel local = LocalModel.load(dir)) {
            Ticket greedy = local.generate("A ticket as JSON:", Ticket.class);
            assertNotNull(greedy.contact().priority());
            assertNotNull(greedy.contact().escalation());
            assertNotNull(greedy.severity());
            GenerationConfig sampled =
                    GenerationConfig.builder().maxNewTokens(400).doSample(true).temperature(1f).topK(0).seed(8L)
                            .eosTokenIds(local.eosTokenIds()).build();
            Ticket hot = local.generate("A ticket as JSON:", Ticket.class, sampled);
            assertNotNull(hot.contact().priority());
            IllegalStateException tooShort =
                    assertThrows(IllegalStateException.class,
                            () -> local.generate("x", Ticket.class, sampled.toBuilder().maxNewTokens(3).build()));
            assertTrue(tooShort.getMessage().contains("before the Ticket was complete"), tooShort.getMessage());
        }
    }

    /** A GPT-2 with GPT-2's vocabulary, tiny otherwise, random weights from a fixed seed. */
    private static void writeRandomGpt2(Path dir) throws Exception {
        writeRandomGpt2(dir, 64);
    }

    /** The same with a context window of {@code positions}. */
    private static void writeRandomGpt2(Path dir, int positions) throws Exception {
        JsonObject config = new JsonObject();
        config.addProperty("model_type", "gpt2");
        config.addProperty("vocab_size", 50257);
        config.addProperty("n_positions", positions);
        config.addProperty("n_embd", 32);
        config.addProperty("n_head", 4);
        config.addProperty("n_layer", 1);
        config.addProperty("eos_token_id", 50256);
        config.addProperty("bos_token_id", 50256);
        Files.writeString(dir.resolve("config.json"), config.toString(), StandardCharsets.UTF_8);
        Gpt2Model block = new Gpt2Model(Gpt2Config.parse(ConfigJson.of(dir.resolve("config.json"), config)));
        try (Model model = Model.newInstance("random-gpt2", Device.cpu(), "PyTorch")) {
            Engine.getInstance().setRandomSeed(5);
            block.initialize(model.getNDManager(), DataType.FLOAT32, new Shape(1, 1));
            Map<String, NDArray> tensors = new LinkedHashMap<>();
            block.namedParameters().forEach((name, parameter) -> tensors.put(name, parameter.getArray()));
            tensors.get("wte.weight").muli(40f); // peaked next-token distributions, as trained models have
            SafeTensorsWriter.write(dir.resolve("model.safetensors"), tensors, null);
        }
    }
}
