package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HubCacheTest {

    private static final String COMMIT = "0123456789abcdef0123456789abcdef01234567";

    @TempDir Path root;

    @Test
    void pathsFollowTheHuggingfaceHubLayout() {
        HubCache cache = new HubCache(root);

        assertEquals(
                "models--openai-community--gpt2", HubCache.repoFolderName("openai-community/gpt2"));
        assertEquals("models--gpt2", HubCache.repoFolderName("gpt2"));
        assertEquals(root.resolve("models--a--b/blobs/e1"), cache.blobFile("a/b", "e1"));
        assertEquals(
                root.resolve("models--a--b/blobs/e1.incomplete"),
                cache.incompleteFile("a/b", "e1"));
        assertEquals(
                root.resolve("models--a--b/snapshots/" + COMMIT + "/x/y.json"),
                cache.snapshotFile("a/b", COMMIT, "x/y.json"));
        assertEquals(root.resolve(".locks/models--a--b/e1.lock"), cache.lockFile("a/b", "e1"));
        assertEquals(
                root.resolve("models--a--b/refs/refs/pr/1"), cache.refFile("a/b", "refs/pr/1"));
    }

    @Test
    void refsAreWrittenWithoutNewlineAndResolvedLikePython() throws Exception {
        HubCache cache = new HubCache(root);

        cache.writeRef("a/b", "main", COMMIT);

        assertEquals(COMMIT, Files.readString(root.resolve("models--a--b/refs/main")));
        assertEquals(Optional.of(COMMIT), cache.resolveCommit("a/b", "main"));
        assertEquals(Optional.of(COMMIT), cache.resolveCommit("a/b", COMMIT));
        assertEquals(Optional.empty(), cache.resolveCommit("a/b", "dev"));
    }

    @Test
    void linkBlobMakesARelativeLinkAndReplacesADanglingOne() throws Exception {
        HubCache cache = new HubCache(root);
        Files.createDirectories(cache.blobFile("a/b", "e1").getParent());
        Files.writeString(cache.blobFile("a/b", "e1"), "hello");
        Path file = cache.snapshotFile("a/b", COMMIT, "config.json");
        Files.createDirectories(file.getParent());
        Files.createSymbolicLink(file, Path.of("../../blobs/missing"));

        Path linked = cache.linkBlob("a/b", COMMIT, "config.json", "e1");

        assertEquals(file, linked);
        assertEquals(Path.of("../../blobs/e1"), Files.readSymbolicLink(linked));
        assertEquals("hello", Files.readString(linked));
        assertTrue(cache.cachedFile("a/b", COMMIT, "config.json").isPresent());
    }

    @Test
    void rejectsComponentsThatWouldEscapeTheCache() {
        HubCache cache = new HubCache(root);

        assertThrows(IllegalArgumentException.class, () -> cache.blobFile("a/b", "../x"));
        assertThrows(IllegalArgumentException.class, () -> cache.snapshotDir("a/b", ".."));
        assertThrows(IllegalArgumentException.class, () -> cache.refFile("a/b", "../../x"));
        assertThrows(IllegalArgumentException.class, () -> cache.repoDir("../a"));
    }
}
