package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HubCacheReuseTest {

    @TempDir Path cache;
    private FakeHub hub;

    @BeforeEach
    void start() throws Exception {
        hub = new FakeHub();
    }

    @AfterEach
    void stop() {
        hub.close();
    }

    @Test
    void secondLoadIsServedFromTheCacheWhenTheServerIsDown() throws Exception {
        FakeHub.Repo repo = HubFixtures.tinyGpt2(hub, "org/tiny", 20_000);
        Path first = HubFixtures.client(hub, cache).snapshot("org/tiny");
        hub.stop();

        Path second = HubFixtures.client(hub, cache).snapshot("org/tiny");
        Path config = HubFixtures.client(hub, cache).file("org/tiny", "main", "config.json");

        assertEquals(first, second);
        assertArrayEquals(repo.content("config.json"), Files.readAllBytes(config));
    }

    @Test
    void secondOnlineLoadDownloadsNothing() throws Exception {
        HubFixtures.tinyGpt2(hub, "org/tiny", 20_000);
        HubFixtures.client(hub, cache).snapshot("org/tiny");
        int before = hub.requests().size();

        HubFixtures.client(hub, cache).snapshot("org/tiny");

        assertEquals(1, hub.requests().size() - before, "only the file list is asked for");
        assertTrue(hub.requests().get(before).path().startsWith("/api/models/"));
    }

    @Test
    void offlineModeUsesTheCacheWithoutAnyRequest() throws Exception {
        HubFixtures.tinyGpt2(hub, "org/tiny", 20_000);
        Path online = HubFixtures.client(hub, cache).snapshot("org/tiny");
        int before = hub.requests().size();
        HubClient offline =
                new HubClient(HubFixtures.config(hub, cache).offline(true).build(), null);

        assertEquals(online, offline.snapshot("org/tiny"));
        assertEquals(online.resolve("vocab.json"), offline.file("org/tiny", "main", "vocab.json"));
        assertEquals(before, hub.requests().size());
    }

    @Test
    void offlineModeWithAMissingFileNamesThatFile() throws Exception {
        HubFixtures.tinyGpt2(hub, "org/tiny", 20_000);
        Path snapshot = HubFixtures.client(hub, cache).snapshot("org/tiny");
        Files.delete(snapshot.resolve("model.safetensors"));
        HubClient offline =
                new HubClient(HubFixtures.config(hub, cache).offline(true).build(), null);

        OfflineCacheMissException weights =
                assertThrows(OfflineCacheMissException.class, () -> offline.snapshot("org/tiny"));
        OfflineCacheMissException named =
                assertThrows(
                        OfflineCacheMissException.class,
                        () -> offline.file("org/tiny", "main", "README.md"));

        assertEquals("model.safetensors", weights.getFilename());
        assertTrue(weights.getMessage().contains("'model.safetensors'"), weights.getMessage());
        assertTrue(weights.getMessage().contains("Offline mode"), weights.getMessage());
        assertTrue(weights.getMessage().contains("HF_HUB_OFFLINE"), weights.getMessage());
        assertEquals(snapshot.resolve("model.safetensors"), weights.getMissingPath());
        assertTrue(named.getMessage().contains("'README.md'"), named.getMessage());
    }

    @Test
    void offlineModeWithoutACachedRevisionNamesTheMissingRef() throws Exception {
        HubClient offline =
                new HubClient(HubFixtures.config(hub, cache).offline(true).build(), null);

        OfflineCacheMissException e =
                assertThrows(OfflineCacheMissException.class, () -> offline.snapshot("org/never"));

        assertNull(e.getFilename());
        assertEquals(cache.resolve("models--org--never/refs/main"), e.getMissingPath());
        assertTrue(e.getMessage().contains("'org/never'"), e.getMessage());
        assertTrue(e.getMessage().contains("Offline mode"), e.getMessage());
        assertTrue(hub.requests().isEmpty());
    }

    @Test
    void unreachableHubWithNothingCachedFailsNamingTheRepoAndTheNetworkError() throws Exception {
        hub.stop();

        OfflineCacheMissException e =
                assertThrows(
                        OfflineCacheMissException.class,
                        () -> HubFixtures.client(hub, cache).snapshot("org/tiny"));

        assertTrue(e.getMessage().contains("cannot be reached"), e.getMessage());
        assertTrue(e.getMessage().contains("'org/tiny'"), e.getMessage());
        assertTrue(e.getCause() instanceof java.io.IOException);
    }

    @Test
    void aCacheLaidOutByPythonIsUsedWithoutDownloading() throws Exception {
        String commit = hub.randomHex(40);
        FakeHub.Repo repo =
                hub.repo("openai-community/gpt2", commit)
                        .file("config.json", "{\"model_type\":\"gpt2\"}")
                        .file("tokenizer.json", "{\"version\":\"1.0\"}")
                        .file("model.safetensors", hub.randomBytes(30_000));
        Path repoDir = cache.resolve("models--openai-community--gpt2");
        Files.createDirectories(repoDir.resolve("blobs"));
        Files.createDirectories(repoDir.resolve("snapshots").resolve(commit));
        Files.createDirectories(repoDir.resolve("refs"));
        Files.writeString(repoDir.resolve("refs/main"), commit);
        for (String name : repo.files.keySet()) {
            Files.write(repoDir.resolve("blobs").resolve(repo.etag(name)), repo.content(name));
            Files.createSymbolicLink(
                    repoDir.resolve("snapshots").resolve(commit).resolve(name),
                    Path.of("../../blobs/" + repo.etag(name)));
        }

        Path online = HubFixtures.client(hub, cache).snapshot("openai-community/gpt2");
        assertEquals(1, hub.requests().size(), "only the file list: " + hub.requests());
        HubClient offline =
                new HubClient(HubFixtures.config(hub, cache).offline(true).build(), null);
        Path offlineSnapshot = offline.snapshot("openai-community/gpt2");
        Path pinned =
                HubFixtures.client(hub, cache).file("openai-community/gpt2", commit, "config.json");

        assertEquals(repoDir.resolve("snapshots").resolve(commit), online);
        assertEquals(online, offlineSnapshot);
        assertEquals(online.resolve("config.json"), pinned);
        assertEquals(1, hub.requests().size(), "no request offline or at a cached commit");
        assertArrayEquals(
                repo.content("model.safetensors"),
                Files.readAllBytes(online.resolve("model.safetensors")));
    }
}
