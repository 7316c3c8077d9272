package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HubIntegrityTest {

    @TempDir Path cache;
    private FakeHub hub;
    private FakeHub.Repo repo;

    @BeforeEach
    void start() throws Exception {
        hub = new FakeHub();
        repo = HubFixtures.tinyGpt2(hub, "org/tiny", 100_000);
    }

    @AfterEach
    void stop() {
        hub.close();
    }

    private void assertRejected(String file, String kind) throws Exception {
        hub.corruptFile = file;

        HubIntegrityException e =
                assertThrows(
                        HubIntegrityException.class,
                        () -> HubFixtures.client(hub, cache).snapshot("org/tiny"));

        String etag = repo.etag(file);
        assertEquals("org/tiny", e.getRepoId());
        assertEquals(file, e.getFilename());
        assertEquals(etag, e.getExpected());
        assertNotEquals(etag, e.getActual());
        for (String part :
                new String[] {"'org/tiny'", "'" + file + "'", etag, e.getActual(), kind}) {
            assertTrue(e.getMessage().contains(part), e.getMessage() + " lacks " + part);
        }
        Path repoDir = cache.resolve("models--org--tiny");
        assertFalse(Files.exists(repoDir.resolve("blobs").resolve(etag)));
        assertFalse(Files.exists(repoDir.resolve("blobs").resolve(etag + ".incomplete")));
        assertFalse(
                Files.exists(
                        repoDir.resolve("snapshots").resolve(repo.commit).resolve(file),
                        LinkOption.NOFOLLOW_LINKS));
    }

    @Test
    void lfsFileNotMatchingItsSha256IsRejectedAndNothingIsCached() throws Exception {
        assertRejected("model.safetensors", "SHA-256");
    }

    @Test
    void smallFileNotMatchingItsGitBlobSha1IsRejectedAndNothingIsCached() throws Exception {
        assertRejected("tokenizer.json", "git blob SHA-1");
    }

    @Test
    void aCorruptFileIsDownloadedAgainOnTheNextLoad() throws Exception {
        hub.corruptFile = "model.safetensors";
        assertThrows(
                HubIntegrityException.class,
                () -> HubFixtures.client(hub, cache).snapshot("org/tiny"));
        hub.corruptFile = null;

        Path snapshot = HubFixtures.client(hub, cache).snapshot("org/tiny");

        assertEquals(
                repo.etag("model.safetensors"),
                FakeHub.sha256(Files.readAllBytes(snapshot.resolve("model.safetensors"))));
    }
}
