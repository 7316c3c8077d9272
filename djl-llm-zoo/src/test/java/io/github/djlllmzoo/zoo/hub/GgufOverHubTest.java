package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ModelNotFoundException;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.NoopTranslator;
import io.github.djlllmzoo.zoo.LlmModelZoo;
import io.github.djlllmzoo.zoo.gguf.GgufType;
import io.github.djlllmzoo.zoo.gguf.GoldenGguf;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GGUF files load through DJL Criteria from a loopback hub, named ({@code gguf_file}) or by their
 * quantization tag ({@code org/name:Q8_0}), into the Hugging Face cache; and from a local path.
 */
class GgufOverHubTest {

    private static final Path QWEN2 =
            Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "qwen2-bias");

    @TempDir Path tmp;

    @Test
    void aGgufFileNamedOrTaggedDownloadsIntoTheCacheAndScoresAsTheLocalFile() throws Exception {
        Path q8 = tmp.resolve("qwen2-bias-Q8_0.gguf");
        Path f32 = tmp.resolve("qwen2-bias-F32.gguf");
        GoldenGguf.write(QWEN2, q8, GgufType.Q8_0);
        GoldenGguf.write(QWEN2, f32, GgufType.F32);
        float[] local = logits(base().optArgument("model", q8.toString()).build());
        try (FakeHub hub = new FakeHub()) {
            hub.repo("someone/qwen2-GGUF")
                    .file("qwen2-bias-Q8_0.gguf", Files.readAllBytes(q8))
                    .file("qwen2-bias-F32.gguf", Files.readAllBytes(f32))
                    .file("README.md", "a GGUF repository");
            String endpoint = hub.endpoint().toString();
            float[] tagged = logits(hubCriteria(endpoint).optArgument("model", "someone/qwen2-GGUF:q8_0").build());
            assertArrayEquals(local, tagged, 0f);
            float[] named = logits(hubCriteria(endpoint).optArgument("model", "someone/qwen2-GGUF")
                    .optArgument("gguf_file", "qwen2-bias-Q8_0.gguf").build());
            assertArrayEquals(local, named, 0f);
            assertEquals(1, hub.requests("GET", "qwen2-bias-Q8_0.gguf").size(), "downloaded once, then cached");
            assertTrue(hub.requests("GET", "qwen2-bias-F32.gguf").isEmpty(), "only the tagged file is fetched");
            assertTrue(Files.isDirectory(tmp.resolve("cache").resolve("models--someone--qwen2-GGUF")));

            ModelNotFoundException e = assertThrows(ModelNotFoundException.class,
                    () -> hubCriteria(endpoint).optArgument("model", "someone/qwen2-GGUF:Q4_K_M").build().loadModel());
            String messages = messages(e);
            assertTrue(messages.contains("qwen2-bias-Q8_0.gguf") && messages.contains("Q4_K_M"), messages);
        }
    }

    @Test
    void aSplitGgufFileNamedByItsFirstPartOrTaggedDownloadsEveryPartAndScoresAsTheWholeFile() throws Exception {
        Path whole = tmp.resolve("qwen2-bias-Q8_0.gguf");
        GoldenGguf.write(QWEN2, whole, GgufType.Q8_0);
        Files.createDirectories(tmp.resolve("split"));
        List<Path> parts = GoldenGguf.split(whole, tmp.resolve("split").resolve("qwen2-bias-Q8_0").toString(), 3);
        float[] local = logits(base().optArgument("model", whole.toString()).build());
        try (FakeHub hub = new FakeHub()) {
            FakeHub.Repo repo = hub.repo("someone/qwen2-split-GGUF");
            for (Path part : parts) {
                repo.file(part.getFileName().toString(), Files.readAllBytes(part));
            }
            String endpoint = hub.endpoint().toString();
            float[] tagged = logits(hubCriteria(endpoint).optArgument("model", "someone/qwen2-split-GGUF:Q8_0").build());
            assertArrayEquals(local, tagged, 0f);
            float[] named = logits(hubCriteria(endpoint).optArgument("model", "someone/qwen2-split-GGUF")
                    .optArgument("gguf_file", parts.get(0).getFileName().toString()).build());
            assertArrayEquals(local, named, 0f);
            for (Path part : parts) {
                assertEquals(1, hub.requests("GET", part.getFileName().toString()).size(), part + " downloaded once");
            }
            ModelNotFoundException notFirst = assertThrows(ModelNotFoundException.class,
                    () -> hubCriteria(endpoint).optArgument("model", "someone/qwen2-split-GGUF")
                            .optArgument("gguf_file", parts.get(1).getFileName().toString()).build().loadModel());
            String messages = messages(notFirst);
            assertTrue(messages.contains(parts.get(0).getFileName().toString()), messages);
        }
    }

    /** DJL's zoo reports a loader's refusal as the cause or a suppressed exception of its own. */
    private static String messages(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append('\n');
            for (Throwable s : t.getSuppressed()) {
                all.append(messages(s));
            }
        }
        return all.toString();
    }

    private static Criteria.Builder<NDList, NDList> base() {
        return Criteria.builder()
                .setTypes(NDList.class, NDList.class)
                .optGroupId(LlmModelZoo.GROUP_ID)
                .optArtifactId(LlmModelZoo.ANY_MODEL)
                .optTranslator(new NoopTranslator());
    }

    private Criteria.Builder<NDList, NDList> hubCriteria(String endpoint) {
        return base().optArgument("HF_ENDPOINT", endpoint)
                .optArgument("HF_HUB_CACHE", tmp.resolve("cache").toString())
                .optArgument("HF_HUB_DISABLE_PROGRESS_BARS", "1");
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
