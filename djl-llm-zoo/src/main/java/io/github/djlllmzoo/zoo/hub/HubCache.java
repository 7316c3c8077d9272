package io.github.djlllmzoo.zoo.hub;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;

/**
 * The Hugging Face cache layout, shared with Python's {@code huggingface_hub}:
 *
 * <pre>
 * {root}/models--{org}--{name}/blobs/{etag}                 file contents, named by etag
 * {root}/models--{org}--{name}/snapshots/{commit}/{file}    relative symlinks to ../../blobs/{etag}
 * {root}/models--{org}--{name}/refs/{revision}              the commit a branch or tag points to
 * {root}/.locks/models--{org}--{name}/{etag}.lock           download locks
 * </pre>
 */
public final class HubCache {

    private final Path root;

    /**
     * Creates a view of the cache rooted at {@code root}; nothing is created until written.
     *
     * @param root the cache directory, e.g. {@code ~/.cache/huggingface/hub}
     */
    public HubCache(Path root) {
        this.root = root.toAbsolutePath().normalize();
    }

    /** @return the absolute cache directory */
    public Path root() {
        return root;
    }

    /**
     * @param repoId the repository, e.g. {@code openai-community/gpt2}
     * @return the folder name, e.g. {@code models--openai-community--gpt2}
     */
    public static String repoFolderName(String repoId) {
        return "models--" + HubNames.checkRepoId(repoId).replace("/", "--");
    }

    /**
     * @param repoId the repository
     * @return {@code {root}/models--{org}--{name}}
     */
    public Path repoDir(String repoId) {
        return root.resolve(repoFolderName(repoId));
    }

    /**
     * @param repoId the repository
     * @param etag the normalized etag (no quotes, no {@code W/})
     * @return {@code blobs/{etag}} of the repository
     */
    public Path blobFile(String repoId, String etag) {
        return repoDir(repoId).resolve("blobs").resolve(component(etag, "etag"));
    }

    /**
     * @param repoId the repository
     * @param etag the normalized etag
     * @return {@code blobs/{etag}.incomplete}, where a download in progress is written
     */
    public Path incompleteFile(String repoId, String etag) {
        return repoDir(repoId).resolve("blobs").resolve(component(etag, "etag") + ".incomplete");
    }

    /**
     * @param repoId the repository
     * @param commit the commit hash
     * @return {@code snapshots/{commit}} of the repository
     */
    public Path snapshotDir(String repoId, String commit) {
        return repoDir(repoId).resolve("snapshots").resolve(component(commit, "commit"));
    }

    /**
     * @param repoId the repository
     * @param commit the commit hash
     * @param filename the file inside the repository, may contain {@code /}
     * @return {@code snapshots/{commit}/{filename}}
     */
    public Path snapshotFile(String repoId, String commit, String filename) {
        Path dir = snapshotDir(repoId, commit);
        Path file = dir.resolve(HubNames.checkFilename(filename)).normalize();
        if (!file.startsWith(dir)) {
            throw new IllegalArgumentException("File name escapes the snapshot: " + filename);
        }
        return file;
    }

    /**
     * @param repoId the repository
     * @param revision a branch or tag, may contain {@code /}
     * @return {@code refs/{revision}}
     */
    public Path refFile(String repoId, String revision) {
        return repoDir(repoId).resolve("refs").resolve(HubNames.checkRevision(revision));
    }

    /**
     * @param repoId the repository
     * @param etag the normalized etag
     * @return {@code {root}/.locks/models--{org}--{name}/{etag}.lock}
     */
    public Path lockFile(String repoId, String etag) {
        return root.resolve(".locks")
                .resolve(repoFolderName(repoId))
                .resolve(component(etag, "etag") + ".lock");
    }

    /**
     * Reads {@code refs/{revision}}.
     *
     * @param repoId the repository
     * @param revision a branch or tag
     * @return the commit hash, or empty when the ref is not cached
     * @throws IOException if the ref exists but cannot be read
     */
    public Optional<String> readRef(String repoId, String revision) throws IOException {
        Path ref = refFile(repoId, revision);
        if (!Files.isRegularFile(ref)) {
            return Optional.empty();
        }
        String commit = Files.readString(ref, StandardCharsets.UTF_8).trim();
        return commit.isEmpty() ? Optional.empty() : Optional.of(commit);
    }

    /**
     * Atomically writes {@code commit} to {@code refs/{revision}} unless it already holds it.
     *
     * @param repoId the repository
     * @param revision a branch or tag
     * @param commit the commit hash it points to
     * @throws IOException if the ref cannot be written
     */
    public void writeRef(String repoId, String revision, String commit) throws IOException {
        component(commit, "commit");
        if (readRef(repoId, revision).filter(commit::equals).isPresent()) {
            return;
        }
        Path ref = refFile(repoId, revision);
        Files.createDirectories(ref.getParent());
        Path tmp = Files.createTempFile(ref.getParent(), ".ref-", ".tmp");
        try {
            Files.writeString(tmp, commit, StandardCharsets.UTF_8);
            moveReplacing(tmp, ref);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /**
     * Resolves a revision with the cache only: {@code refs/{revision}} if present, else the
     * revision itself when it is a 40-hex commit hash.
     *
     * @param repoId the repository
     * @param revision a branch, tag or commit
     * @return the commit hash, or empty when the cache cannot tell
     * @throws IOException if the ref cannot be read
     */
    public Optional<String> resolveCommit(String repoId, String revision) throws IOException {
        Optional<String> ref = readRef(repoId, revision);
        if (ref.isPresent()) {
            return ref;
        }
        return HubNames.isCommit(revision) ? Optional.of(revision) : Optional.empty();
    }

    /**
     * @param repoId the repository
     * @param commit the commit hash
     * @param filename the file inside the repository
     * @return the snapshot file when it exists (following symlinks), else empty
     */
    public Optional<Path> cachedFile(String repoId, String commit, String filename) {
        Path file = snapshotFile(repoId, commit, filename);
        return Files.isRegularFile(file) ? Optional.of(file) : Optional.empty();
    }

    /**
     * Makes {@code snapshots/{commit}/{filename}} a relative symlink to {@code blobs/{etag}}, or a
     * copy of the blob where the file system does not support symlinks. An existing snapshot file
     * is kept; a dangling link is replaced.
     *
     * @param repoId the repository
     * @param commit the commit hash
     * @param filename the file inside the repository
     * @param etag the etag naming the blob, which must exist
     * @return the snapshot file
     * @throws IOException if neither a link nor a copy can be made
     */
    public Path linkBlob(String repoId, String commit, String filename, String etag)
            throws IOException {
        Path blob = blobFile(repoId, etag);
        Path file = snapshotFile(repoId, commit, filename);
        if (Files.isRegularFile(file)) {
            return file;
        }
        Files.createDirectories(file.getParent());
        if (Files.isSymbolicLink(file)) {
            Files.delete(file);
        }
        try {
            Files.createSymbolicLink(file, file.getParent().relativize(blob));
            return file;
        } catch (FileAlreadyExistsException e) {
            if (Files.isRegularFile(file)) {
                return file;
            }
            throw e;
        } catch (UnsupportedOperationException | IOException e) {
            Path tmp = Files.createTempFile(file.getParent(), ".copy-", ".tmp");
            try {
                Files.copy(blob, tmp, StandardCopyOption.REPLACE_EXISTING);
                moveReplacing(tmp, file);
            } finally {
                Files.deleteIfExists(tmp);
            }
            return file;
        }
    }

    static void moveReplacing(Path source, Path target) throws IOException {
        try {
            Files.move(
                    source,
                    target,
                    StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(source, target, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    private static String component(String value, String what) {
        if (value == null
                || value.isEmpty()
                || value.equals(".")
                || value.equals("..")
                || value.indexOf('/') >= 0
                || value.indexOf('\\') >= 0
                || value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("Invalid " + what + ": '" + value + "'");
        }
        return value;
    }

    @Override
    public String toString() {
        return "HubCache{" + root + '}';
    }
}
