package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HubDownloadTest {

    @TempDir Path tmp;
    private Path cache;
    private FakeHub hub;

    @BeforeEach
    void start() throws Exception {
        hub = new FakeHub();
        cache = tmp.resolve("hub");
    }

    @AfterEach
    void stop() {
        hub.close();
    }

    @Test
    void downloadsOnlyTheNeededFilesIntoTheHuggingFaceCacheLayout() throws Exception {
        FakeHub.Repo repo = HubFixtures.tinyGpt2(hub, "org/tiny-gpt2", 200_000);

        Path snapshot = HubFixtures.client(hub, cache).snapshot("org/tiny-gpt2", "main");

        Path repoDir = cache.resolve("models--org--tiny-gpt2");
        assertEquals(repoDir.resolve("snapshots").resolve(repo.commit), snapshot);
        assertEquals(repo.commit, Files.readString(repoDir.resolve("refs/main")));
        for (String name : HubFixtures.NEEDED) {
            Path file = snapshot.resolve(name);
            assertTrue(Files.isSymbolicLink(file), name + " is a symlink");
            assertEquals(
                    Path.of("../../blobs/" + repo.etag(name)), Files.readSymbolicLink(file), name);
            assertArrayEquals(repo.content(name), Files.readAllBytes(file), name);
            assertTrue(Files.isRegularFile(repoDir.resolve("blobs").resolve(repo.etag(name))));
            assertTrue(
                    Files.isRegularFile(
                            cache.resolve(
                                    ".locks/models--org--tiny-gpt2/" + repo.etag(name) + ".lock")));
        }
        assertEquals(64, repo.etag("model.safetensors").length(), "LFS blob named by sha256");
        assertEquals(40, repo.etag("config.json").length(), "small blob named by git sha1");
        for (String skipped : List.of("README.md", "pytorch_model.bin", ".gitattributes")) {
            assertFalse(Files.exists(snapshot.resolve(skipped)), skipped);
            assertTrue(hub.requests("GET", skipped).isEmpty(), skipped + " not requested");
            assertTrue(hub.requests("HEAD", skipped).isEmpty(), skipped + " not requested");
        }
        assertTrue(HubFixtures.find(cache, ".incomplete").isEmpty());
        assertEquals(1, hub.requests("GET", "/cdn/" + repo.etag("model.safetensors")).size());
    }

    @Test
    void fetchesTheIndexAndEveryShardOfAShardedModel() throws Exception {
        FakeHub.Repo repo = HubFixtures.shardedLlama(hub, "org/sharded");

        Path snapshot = HubFixtures.client(hub, cache).snapshot("org/sharded", null);

        for (String name :
                List.of(
                        "config.json",
                        "tokenizer.json",
                        "model.safetensors.index.json",
                        "model-00001-of-00002.safetensors",
                        "model-00002-of-00002.safetensors")) {
            assertArrayEquals(repo.content(name), Files.readAllBytes(snapshot.resolve(name)), name);
        }
        assertFalse(Files.exists(snapshot.resolve("README.md")));
        assertFalse(Files.exists(snapshot.resolve("model.safetensors")));
    }

    @Test
    void fileInASubfolderLinksUpToTheBlobWithARelativePath() throws Exception {
        FakeHub.Repo repo =
                hub.repo("org/sub").file("onnx/decoder/model.onnx", hub.randomBytes(5000));

        Path file =
                HubFixtures.client(hub, cache).file("org/sub", "main", "onnx/decoder/model.onnx");

        assertEquals(
                Path.of("../../../../blobs/" + repo.etag("onnx/decoder/model.onnx")),
                Files.readSymbolicLink(file));
        assertArrayEquals(repo.content("onnx/decoder/model.onnx"), Files.readAllBytes(file));
    }

    @Test
    void followsAnAbsoluteRedirectAndNormalizesWeakEtags() throws Exception {
        FakeHub.Repo repo = HubFixtures.tinyGpt2(hub, "tiny", 50_000);
        hub.cdn = FakeHub.Cdn.ABSOLUTE;
        hub.weakEtags = true;

        Path snapshot = HubFixtures.client(hub, cache).snapshot("tiny");

        assertEquals(cache.resolve("models--tiny/snapshots/" + repo.commit), snapshot);
        assertArrayEquals(
                repo.content("model.safetensors"),
                Files.readAllBytes(snapshot.resolve("model.safetensors")));
        assertEquals(
                Path.of("../../blobs/" + repo.etag("config.json")),
                Files.readSymbolicLink(snapshot.resolve("config.json")));
    }

    @Test
    void followsTheRedirectOfARenamedRepository() throws Exception {
        FakeHub.Repo repo = HubFixtures.tinyGpt2(hub, "org/new-name", 20_000);
        hub.rename("org/old-name", "org/new-name");

        Path snapshot = HubFixtures.client(hub, cache).snapshot("org/old-name");

        assertEquals(cache.resolve("models--org--old-name/snapshots/" + repo.commit), snapshot);
        assertArrayEquals(
                repo.content("model.safetensors"),
                Files.readAllBytes(snapshot.resolve("model.safetensors")));
        assertEquals(
                Path.of("../../blobs/" + repo.etag("model.safetensors")),
                Files.readSymbolicLink(snapshot.resolve("model.safetensors")));
    }

    @Test
    void fileMetadataReadsTheLfsRedirectWithoutFollowingIt() throws Exception {
        FakeHub.Repo repo = HubFixtures.tinyGpt2(hub, "org/meta", 10_000);

        HubFileMetadata lfs =
                HubFixtures.client(hub, cache)
                        .fileMetadata("org/meta", "main", "model.safetensors");
        HubFileMetadata small =
                HubFixtures.client(hub, cache).fileMetadata("org/meta", "main", "config.json");

        assertEquals(repo.commit, lfs.commit());
        assertEquals(repo.etag("model.safetensors"), lfs.etag());
        assertEquals(10_000, lfs.size());
        assertEquals(hub.endpoint().resolve("/cdn/" + lfs.etag()), lfs.location());
        assertEquals(repo.etag("config.json"), small.etag());
        assertEquals(repo.content("config.json").length, small.size());
        assertTrue(hub.requests("GET", "/cdn/").isEmpty());
    }

    @Test
    void fetchesOneNamedFileAndReusesItAtAPinnedCommitWithoutRequests() throws Exception {
        FakeHub.Repo repo = HubFixtures.tinyGpt2(hub, "org/one", 1000);
        HubClient client = HubFixtures.client(hub, cache);

        Path file = client.file("org/one", "main", "tokenizer.json");
        int before = hub.requests().size();
        Path again = client.file("org/one", repo.commit, "tokenizer.json");

        assertEquals(file, again);
        assertEquals(before, hub.requests().size());
        assertArrayEquals(repo.content("tokenizer.json"), Files.readAllBytes(file));
        assertFalse(Files.exists(file.resolveSibling("config.json")));
    }

    @Test
    void rejectsAPathTraversalNameInTheServerFileList() throws Exception {
        HubFixtures.tinyGpt2(hub, "org/evil", 1000).sibling("../evil");

        HubException e =
                assertThrows(
                        HubException.class,
                        () -> HubFixtures.client(hub, cache).snapshot("org/evil"));

        assertTrue(e.getMessage().contains("'../evil'"), e.getMessage());
        assertTrue(e.getMessage().contains("org/evil"), e.getMessage());
        assertFalse(Files.exists(cache.resolve("models--org--evil/snapshots")));
    }

    @Test
    void rejectsAShardNameThatEscapesTheSnapshot() throws Exception {
        hub.repo("org/evil-index")
                .file("config.json", "{}")
                .file(
                        "model.safetensors.index.json",
                        "{\"weight_map\":{\"w\":\"../../../../evil.safetensors\"}}")
                .sibling("../../../../evil.safetensors");

        assertThrows(
                HubException.class,
                () -> HubFixtures.client(hub, cache).snapshot("org/evil-index"));

        assertTrue(HubFixtures.find(tmp, "evil.safetensors").isEmpty());
    }

    @Test
    void rejectsPathTraversalInRepoIdsRevisionsAndFileNames() {
        HubClient client = HubFixtures.client(hub, cache);
        for (String repoId : List.of("../x", "a/b/c", "/abs", "a\\b", "a/..", "", "org--x/y")) {
            assertThrows(IllegalArgumentException.class, () -> client.snapshot(repoId), repoId);
        }
        for (String name : List.of("../config.json", "/etc/passwd", "a\\b", "a//b", "./x", "C:x")) {
            assertThrows(
                    IllegalArgumentException.class, () -> client.file("org/x", "main", name), name);
        }
        assertThrows(IllegalArgumentException.class, () -> client.snapshot("org/x", "../../x"));
        assertTrue(hub.requests().isEmpty());
    }

    @Test
    void repoWithOnlyPytorchWeightsIsRejectedAsUnsupported() throws Exception {
        hub.repo("org/bin-only")
                .file("config.json", "{}")
                .file("pytorch_model.bin", hub.randomBytes(100));

        UnsupportedWeightsException e =
                assertThrows(
                        UnsupportedWeightsException.class,
                        () -> HubFixtures.client(hub, cache).snapshot("org/bin-only"));

        assertTrue(e.getMessage().contains("org/bin-only"), e.getMessage());
        assertTrue(e.getMessage().contains("pytorch_model.bin"), e.getMessage());
        assertTrue(e.getMessage().contains("safetensors"), e.getMessage());
        assertEquals(List.of("pytorch_model.bin"), e.getWeightFiles());
        assertTrue(hub.requests("GET", "pytorch_model.bin").isEmpty());
    }

    @Test
    void unknownRepoRevisionAndFileRaiseNotFoundNamingThem() throws Exception {
        HubFixtures.tinyGpt2(hub, "org/known", 1000);
        HubClient client = HubFixtures.client(hub, cache);

        HubFileNotFoundException repo =
                assertThrows(HubFileNotFoundException.class, () -> client.snapshot("org/unknown"));
        HubFileNotFoundException revision =
                assertThrows(
                        HubFileNotFoundException.class, () -> client.snapshot("org/known", "v9"));
        HubFileNotFoundException file =
                assertThrows(
                        HubFileNotFoundException.class,
                        () -> client.file("org/known", "main", "nope.json"));

        assertTrue(repo.getMessage().contains("'org/unknown'"), repo.getMessage());
        assertTrue(revision.getMessage().contains("'v9'"), revision.getMessage());
        assertEquals("nope.json", file.getFilename());
        assertTrue(file.getMessage().contains("'nope.json'"), file.getMessage());
        assertTrue(file.getMessage().contains("'org/known'"), file.getMessage());
    }

    @Test
    void repoWithoutConfigIsNotFoundNamingConfigJson() throws Exception {
        hub.repo("org/no-config").file("model.safetensors", hub.randomBytes(100));

        HubFileNotFoundException e =
                assertThrows(
                        HubFileNotFoundException.class,
                        () -> HubFixtures.client(hub, cache).snapshot("org/no-config"));

        assertEquals("config.json", e.getFilename());
    }
}
