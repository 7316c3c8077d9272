package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.MalformedModelException;
import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.repository.LocalRepository;
import ai.djl.repository.MRL;
import ai.djl.repository.RemoteRepository;
import ai.djl.repository.Repository;
import ai.djl.repository.SimpleRepository;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.DefaultModelZoo;
import ai.djl.repository.zoo.ModelNotFoundException;
import ai.djl.repository.zoo.ModelZoo;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.TranslateException;
import io.github.djlllmzoo.blocks.KvCache;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * DJL's standard ways of naming a model, {@code Criteria.optModelPath(dir)} and {@code
 * optModelUrls("file:///dir")}, load this project's checkpoint directories through {@code
 * Criteria.loadModel}, while every other directory and {@code djl://} URL keeps DJL's own
 * repositories. ({@code djl://io.github.djlllmzoo/...} over a hub: {@code ZooCriteriaOverHubTest}.)
 */
class DjlModelUrlsTest {

    private static final Path DEFAULT_MODEL =
            Paths.get(System.getProperty("llmzoo.home", ".."), "models", "default").toAbsolutePath().normalize();
    private static final Path GPT2_TINY =
            Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "gpt2-tiny")
                    .toAbsolutePath()
                    .normalize();
    private static final String PROMPT = "Once upon a time";

    @TempDir Path temp;

    @Test
    void optModelPathGeneratesTheSameTextAsTheZoosOwnLoader() throws Exception {
        String viaPath =
                generate(Criteria.builder().setTypes(String.class, String.class).optModelPath(DEFAULT_MODEL));
        String viaZoo =
                generate(
                        Criteria.builder()
                                .setTypes(String.class, String.class)
                                .optGroupId(LlmModelZoo.GROUP_ID)
                                .optArtifactId(LlmModelZoo.ANY_MODEL)
                                .optArgument("model", DEFAULT_MODEL.toString()));
        assertFalse(viaPath.isBlank(), "generated text");
        assertEquals(viaZoo, viaPath);
    }

    @Test
    void fileUrlsWithAndWithoutATrailingSlashGiveTheCheckpointsLogits() throws Exception {
        for (String url : new String[] {"file://" + GPT2_TINY, GPT2_TINY.toUri().toString()}) {
            Criteria<NDList, NDList> criteria =
                    Criteria.builder().setTypes(NDList.class, NDList.class).optModelUrls(url).build();
            try (ZooModel<NDList, NDList> model = criteria.loadModel();
                    Predictor<NDList, NDList> predictor = model.newPredictor();
                    NDManager manager = NDManager.newBaseManager("PyTorch");
                    LocalModel local = LocalModel.load(GPT2_TINY)) {
                assertEquals(GPT2_TINY, model.getModelPath(), url);
                long[] ids = {113, 455, 295};
                NDList out = predictor.predict(new NDList(manager.create(ids, new Shape(1, 3))));
                float[] logits = out.singletonOrThrow().get("0, -1").toFloatArray();
                try (KvCache cache = local.block().newCache(local.model().getNDManager(), 1, 4)) {
                    // The same weights through the same blocks: equal to float rounding of one run.
                    assertArrayEquals(local.generator().nextLogits(ids, cache), logits, 1e-5f, url);
                }
            }
        }
    }

    @Test
    void urlQueryArgumentsReachTheTranslator() throws Exception {
        String url = DEFAULT_MODEL.toUri() + "?max_new_tokens=3&do_sample=false";
        Criteria<String, String> criteria =
                Criteria.builder().setTypes(String.class, String.class).optModelUrls(url).build();
        try (ZooModel<String, String> model = criteria.loadModel();
                Predictor<String, String> predictor = model.newPredictor();
                LocalModel local = LocalModel.load(DEFAULT_MODEL)) {
            String text = predictor.predict(PROMPT);
            long[] prompt = local.tokenizer().encode(PROMPT);
            long[] all = local.tokenizer().encode(PROMPT + text);
            assertTrue(all.length - prompt.length <= 3, "at most 3 new tokens: '" + text + "'");
        }
    }

    @Test
    void aCheckpointWithAnInvalidFieldFailsNamingTheField() throws Exception {
        Path dir = copyOf(GPT2_TINY, temp.resolve("broken"));
        Files.writeString(
                dir.resolve("config.json"),
                Files.readString(dir.resolve("config.json")).replace("\"n_head\": 4", "\"n_head\": -4"));
        Criteria<NDList, NDList> criteria =
                Criteria.builder().setTypes(NDList.class, NDList.class).optModelPath(dir).build();
        IOException e = assertThrows(IOException.class, criteria::loadModel);
        assertTrue(e.getMessage().contains("n_head") && e.getMessage().contains("config.json"), e.getMessage());
    }

    @Test
    void directoriesThatAreNotThisProjectsCheckpointsKeepDjlsRepositories() throws Exception {
        Path empty = Files.createDirectories(temp.resolve("empty"));
        Path bert = Files.createDirectories(temp.resolve("bert"));
        Files.writeString(bert.resolve("config.json"), "{\"model_type\":\"bert\"}");
        Path traced = copyOf(GPT2_TINY, temp.resolve("traced"));
        Files.write(traced.resolve("traced.pt"), new byte[] {0});
        Path served = copyOf(GPT2_TINY, temp.resolve("served"));
        Files.writeString(served.resolve("serving.properties"), "engine=PyTorch\n");
        for (Path dir : List.of(empty, bert, traced, served)) {
            Repository repo = Repository.newInstance("test", dir.toUri().toString());
            assertInstanceOf(SimpleRepository.class, repo, dir.toString());
            MRL mrl = repo.getResources().get(0);
            assertEquals(DefaultModelZoo.GROUP_ID, mrl.getGroupId(), dir.toString());
            assertEquals(dir.getFileName().toString(), mrl.getArtifactId());
        }
        assertTrue(Repository.newInstance("test", temp.resolve("missing").toUri().toString()).getResources().isEmpty());

        Path local = Files.createDirectories(temp.resolve("local").resolve("group").resolve("model"));
        Files.writeString(
                local.resolve("metadata.json"),
                "{\"metadataVersion\":\"0.2\",\"groupId\":\"group\",\"artifactId\":\"model\",\"artifacts\":[]}");
        assertInstanceOf(LocalRepository.class, Repository.newInstance("test", temp.resolve("local").toUri().toString()));

        Repository checkpoint = Repository.newInstance("test", GPT2_TINY.toUri().toString());
        assertInstanceOf(CheckpointRepository.class, checkpoint);
        assertEquals(LlmModelZoo.GROUP_ID, checkpoint.getResources().get(0).getGroupId());
    }

    @Test
    void djlUrlsOfOtherZoosStillNameTheirModelsOnDjlsRepository() {
        ModelZoo.registerModelZoo(() -> new OtherZoo());
        Repository repo = Repository.newInstance("test", "djl://test.other.zoo/some-model/0.0.1/weights");
        assertInstanceOf(RemoteRepository.class, repo);
        assertEquals(URI.create("https://mlrepo.djl.ai/"), repo.getBaseUri());
        MRL mrl = repo.getResources().get(0);
        assertEquals("test.other.zoo", mrl.getGroupId());
        assertEquals("some-model", mrl.getArtifactId());
        assertEquals("0.0.1", mrl.getVersion());
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> Repository.newInstance("test", "djl://test.other.zoo/no-such-model"));
        assertTrue(e.getMessage().contains("djl://test.other.zoo/no-such-model"), e.getMessage());
    }

    @Test
    void aDjlUrlOfAnUnknownNameSaysWhichNamesAndWaysWork() {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> Criteria.builder().setTypes(String.class, String.class)
                                .optModelUrls("djl://" + LlmModelZoo.GROUP_ID + "/gtp2"));
        String message = e.getMessage();
        assertTrue(message.contains("'gtp2'"), message);
        assertTrue(message.contains("gpt2, gpt2-medium"), message);
        assertTrue(message.contains("org/name"), message);
        assertTrue(message.contains("optModelPath(Paths.get(dir))"), message);
    }

    private static String generate(Criteria.Builder<String, String> builder)
            throws IOException, ModelNotFoundException, MalformedModelException, TranslateException {
        Criteria<String, String> criteria =
                builder.optArgument("max_new_tokens", 12).optArgument("do_sample", false).build();
        try (ZooModel<String, String> model = criteria.loadModel();
                Predictor<String, String> predictor = model.newPredictor()) {
            return predictor.predict(PROMPT);
        }
    }

    private static Path copyOf(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        for (String name : new String[] {"config.json", "model.safetensors"}) {
            Files.copy(from.resolve(name), to.resolve(name));
        }
        return to;
    }

    /** A zoo of another group, to name through {@code djl://}. */
    private static final class OtherZoo extends ModelZoo {
        OtherZoo() {
            addModel(new LlmModelLoader("some-model", "gpt2"));
        }

        @Override
        public String getGroupId() {
            return "test.other.zoo";
        }

        @Override
        public Set<String> getSupportedEngines() {
            return Set.of("PyTorch");
        }
    }
}
