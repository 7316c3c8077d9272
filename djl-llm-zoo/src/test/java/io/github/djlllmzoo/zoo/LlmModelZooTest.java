package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ModelLoader;
import ai.djl.repository.zoo.ModelNotFoundException;
import ai.djl.repository.zoo.ModelZoo;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.NoopTranslator;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.blocks.config.LlamaFamily;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class LlmModelZooTest {

    private static final Path GPT2_TINY =
            Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "gpt2-tiny")
                    .toAbsolutePath();

    @Test
    void theZooIsRegisteredWithDjlAndListsEveryKnownModel() {
        ModelZoo zoo = ModelZoo.getModelZoo(LlmModelZoo.GROUP_ID);
        assertNotNull(zoo, "found through META-INF/services");
        Set<String> artifacts =
                zoo.getModelLoaders().stream().map(ModelLoader::getArtifactId).collect(Collectors.toSet());
        for (String name :
                new String[] {
                    "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "distilgpt2", "TinyLlama-1.1B",
                    "SmolLM2-135M", "SmolLM2-360M", "Llama-3.2-1B", "Qwen2.5-0.5B-Instruct",
                    "Qwen2.5-1.5B-Instruct", "Qwen3-0.6B", "Qwen3-1.7B", "Phi-3-mini-4k-instruct",
                    "gemma-2-2b-it", "gemma-3-270m-it", "gemma-3-1b-it", "Mistral-7B-Instruct-v0.3",
                    LlmModelZoo.ANY_MODEL
                }) {
            assertTrue(artifacts.contains(name), name);
        }
        assertEquals("TinyLlama/TinyLlama-1.1B-Chat-v1.0", KnownModel.find("tinyllama-1.1b").orElseThrow().hubId());
        assertEquals("gpt2", KnownModel.find("openai-community/gpt2").orElseThrow().name());
        assertEquals("Qwen/Qwen3-0.6B", KnownModel.find("qwen3-0.6b").orElseThrow().hubId());
        assertEquals("google/gemma-3-270m-it", KnownModel.find("gemma-3-270m-it").orElseThrow().hubId());
        assertEquals("google/gemma-2-2b-it", KnownModel.find("gemma-2-2b-it").orElseThrow().hubId());
        assertEquals("google/gemma-3-1b-it", KnownModel.find("gemma-3-1b-it").orElseThrow().hubId());
        assertEquals(
                "mistralai/Mistral-7B-Instruct-v0.3",
                KnownModel.find("mistral-7b-instruct-v0.3").orElseThrow().hubId());
    }

    @Test
    void everyKnownModelsFamilyIsAModelTypeTheConfigsRead() {
        for (KnownModel model : KnownModel.ALL) {
            assertTrue(
                    model.family().equals(Gpt2Config.MODEL_TYPE)
                            || LlamaFamily.MODEL_TYPES.contains(model.family()),
                    model.name() + ": " + model.family());
        }
    }

    @Test
    void aLocalDirectoryLoadsThroughCriteriaAndGivesTheSameLogitsAsLocalModel() throws Exception {
        for (String reference : new String[] {GPT2_TINY.toString(), GPT2_TINY.toUri().toString()}) {
            Criteria<NDList, NDList> criteria =
                    Criteria.builder()
                            .setTypes(NDList.class, NDList.class)
                            .optGroupId(LlmModelZoo.GROUP_ID)
                            .optArtifactId(LlmModelZoo.ANY_MODEL)
                            .optArgument("model", reference)
                            .optTranslator(new NoopTranslator())
                            .build();
            try (ZooModel<NDList, NDList> model = criteria.loadModel();
                    Predictor<NDList, NDList> predictor = model.newPredictor();
                    NDManager manager = NDManager.newBaseManager("PyTorch");
                    LocalModel local = LocalModel.load(GPT2_TINY)) {
                assertEquals(GPT2_TINY, model.getModelPath());
                long[] ids = {113, 455, 295};
                NDList out = predictor.predict(new NDList(manager.create(ids, new Shape(1, 3))));
                float[] logits = out.singletonOrThrow().get("0, -1").toFloatArray();
                try (io.github.djlllmzoo.blocks.KvCache cache =
                        local.block().newCache(local.model().getNDManager(), 1, 4)) {
                    assertArrayEquals(local.generator().nextLogits(ids, cache), logits,
                            RoundingBound.ofLogits(local.config(), ids.length, logits), reference);
                }
            }
        }
    }

    @Test
    void anUnknownReferenceIsAClearModelNotFound() {
        Criteria<NDList, NDList> criteria =
                Criteria.builder()
                        .setTypes(NDList.class, NDList.class)
                        .optGroupId(LlmModelZoo.GROUP_ID)
                        .optArtifactId(LlmModelZoo.ANY_MODEL)
                        .optArgument("model", "/no/such/checkpoint")
                        .optTranslator(new NoopTranslator())
                        .build();
        ModelNotFoundException e = assertThrows(ModelNotFoundException.class, criteria::loadModel);
        String message = e.getMessage() + (e.getCause() == null ? "" : " " + e.getCause().getMessage());
        assertTrue(message.contains("/no/such/checkpoint"), message);
    }

    @Test
    void theAnyLoaderWithoutAModelArgumentSaysWhatItNeeds() {
        Criteria<NDList, NDList> criteria =
                Criteria.builder()
                        .setTypes(NDList.class, NDList.class)
                        .optGroupId(LlmModelZoo.GROUP_ID)
                        .optArtifactId(LlmModelZoo.ANY_MODEL)
                        .optTranslator(new NoopTranslator())
                        .build();
        ModelNotFoundException e = assertThrows(ModelNotFoundException.class, criteria::loadModel);
        String message = e.getMessage() + (e.getCause() == null ? "" : " " + e.getCause().getMessage());
        assertTrue(message.contains("optArgument(\"model\""), message);
    }

    @Test
    void referencesThatAreNeitherNamesIdsNorDirectoriesAreRejected() {
        ModelNotFoundException e =
                assertThrows(
                        ModelNotFoundException.class,
                        () -> ModelReference.resolve("not a model!", null, null));
        assertTrue(e.getMessage().contains("not a model!"), e.getMessage());
    }
}
