package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.NoopTranslator;
import io.github.djlllmzoo.zoo.LlmModelZoo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A registry name loads through DJL Criteria from a loopback hub, then from the cache alone. */
class ZooCriteriaOverHubTest {

    private static final Path GPT2_TINY =
            Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "gpt2-tiny");

    @TempDir Path cache;

    @Test
    void aRegistryNameDownloadsIntoTheHubCacheAndTheSecondLoadNeedsNoServer() throws Exception {
        float[] first;
        try (FakeHub hub = new FakeHub()) {
            hub.repo("openai-community/gpt2")
                    .file("config.json", Files.readAllBytes(GPT2_TINY.resolve("config.json")))
                    .file("model.safetensors", Files.readAllBytes(GPT2_TINY.resolve("model.safetensors")))
                    .sibling("pytorch_model.bin");
            first = logits(criteria(hub.endpoint().toString()));
            assertFalse(hub.requests("GET", "pytorch_model.bin").size() > 0, "only needed files are fetched");
            assertTrue(
                    Files.isDirectory(cache.resolve("models--openai-community--gpt2").resolve("blobs")),
                    "Hugging Face cache layout");
        }
        float[] second = logits(criteria("http://127.0.0.1:9"));
        assertArrayEquals(first, second, 0f);
    }

    private Criteria<NDList, NDList> criteria(String endpoint) {
        return Criteria.builder()
                .setTypes(NDList.class, NDList.class)
                .optGroupId(LlmModelZoo.GROUP_ID)
                .optArtifactId("gpt2")
                .optArgument("HF_ENDPOINT", endpoint)
                .optArgument("HF_HUB_CACHE", cache.toString())
                .optArgument("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                .optTranslator(new NoopTranslator())
                .build();
    }

    private static float[] logits(Criteria<NDList, NDList> criteria) throws Exception {
        try (ZooModel<NDList, NDList> model = criteria.loadModel();
                Predictor<NDList, NDList> predictor = model.newPredictor();
                NDManager manager = NDManager.newBaseManager("PyTorch")) {
            NDList out = predictor.predict(new NDList(manager.create(new long[] {1, 2, 3}, new Shape(1, 3))));
            return out.singletonOrThrow().toFloatArray();
        }
    }
}
