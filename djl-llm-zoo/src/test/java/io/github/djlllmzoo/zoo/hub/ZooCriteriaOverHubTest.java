package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.NoopTranslator;
import io.github.djlllmzoo.zoo.LlmModelZoo;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A registry name loads through DJL Criteria from a loopback hub, then from the cache alone; so do
 * {@code djl://io.github.djlllmzoo/...} model URLs.
 */
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

    @Test
    void djlUrlsOfARegistryNameAndOfAHubIdDownloadAndGiveTheSameLogits() throws Exception {
        try (FakeHub hub = new FakeHub()) {
            for (String repo : new String[] {"openai-community/gpt2", "someone/tiny-gpt2"}) {
                hub.repo(repo)
                        .file("config.json", Files.readAllBytes(GPT2_TINY.resolve("config.json")))
                        .file("model.safetensors", Files.readAllBytes(GPT2_TINY.resolve("model.safetensors")));
            }
            String query =
                    "?HF_ENDPOINT=" + encode(hub.endpoint().toString()) + "&HF_HUB_CACHE=" + encode(cache.toString())
                            + "&HF_HUB_DISABLE_PROGRESS_BARS=1";
            Criteria<NDList, NDList> registryName = url("djl://" + LlmModelZoo.GROUP_ID + "/gpt2" + query);
            assertFalse(registryName.isDownloaded(), "not in the cache yet");
            float[] viaZoo = logits(criteria(hub.endpoint().toString()));
            assertTrue(registryName.isDownloaded(), "the zoo's download is the URL's too");
            assertArrayEquals(viaZoo, logits(registryName), 0f);
            assertArrayEquals(
                    viaZoo, logits(url("djl://" + LlmModelZoo.GROUP_ID + "/someone/tiny-gpt2" + query)), 0f);
            assertFalse(hub.requests("GET", "someone/tiny-gpt2").isEmpty(), "the hub id's files came from the hub");
        }
    }

    @Test
    void aDjlUrlOfAModelNeitherCachedNorReachableSaysWhatIsMissingAndWhatWorks() {
        Criteria<NDList, NDList> criteria =
                url("djl://" + LlmModelZoo.GROUP_ID + "/gpt2?HF_HUB_OFFLINE=1&HF_HUB_CACHE=" + encode(cache.toString()));
        IOException e = assertThrows(IOException.class, criteria::loadModel);
        String message = e.getMessage();
        assertTrue(message.contains("openai-community/gpt2"), message);
        assertTrue(message.contains("HF_HUB_OFFLINE"), message);
        assertTrue(message.contains("optModelPath(Paths.get(dir))"), message);
    }

    private static Criteria<NDList, NDList> url(String url) {
        return Criteria.builder().setTypes(NDList.class, NDList.class).optModelUrls(url).build();
    }

    private static String encode(String value) {
        return URLEncoder.encode(value, StandardCharsets.UTF_8);
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
