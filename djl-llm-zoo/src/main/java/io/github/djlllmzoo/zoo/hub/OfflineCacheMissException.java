package io.github.djlllmzoo.zoo.hub;

import ai.djl.repository.zoo.ModelNotFoundException;
import java.nio.file.Path;

/**
 * A file is needed from the local cache, because offline mode is on ({@code HF_HUB_OFFLINE}) or
 * the hub cannot be reached, and the cache does not have it. The message names the missing file
 * and where it was looked for.
 */
public class OfflineCacheMissException extends ModelNotFoundException {

    private static final long serialVersionUID = 1L;

    private final String repoId;
    private final String revision;
    private final String filename;
    private final transient Path missingPath;

    /**
     * Creates an exception for a cache miss.
     *
     * @param repoId the repository
     * @param revision the revision asked for
     * @param filename the repository file that is missing, or {@code null} when the cache has no
     *     snapshot for the revision at all
     * @param missingPath the cache path that does not exist
     * @param reason why the cache was used, e.g. "Offline mode is on (HF_HUB_OFFLINE)"
     * @param cause the network error that forced the cache, or {@code null} in offline mode
     */
    public OfflineCacheMissException(
            String repoId,
            String revision,
            String filename,
            Path missingPath,
            String reason,
            Throwable cause) {
        super(message(repoId, revision, filename, missingPath, reason, cause != null), cause);
        this.repoId = repoId;
        this.revision = revision;
        this.filename = filename;
        this.missingPath = missingPath;
    }

    private static String message(
            String repoId,
            String revision,
            String filename,
            Path missingPath,
            String reason,
            boolean networkError) {
        String what =
                filename == null
                        ? "no snapshot of '"
                                + repoId
                                + "' for revision '"
                                + revision
                                + "' is cached"
                        : "file '"
                                + filename
                                + "' of '"
                                + repoId
                                + "' (revision '"
                                + revision
                                + "') is not cached";
        return reason
                + ", and "
                + what
                + " (missing: "
                + missingPath
                + "). "
                + (networkError
                        ? "Check the network connection and HF_ENDPOINT."
                        : "Download it once while online, or unset HF_HUB_OFFLINE.");
    }

    /** @return the repository id */
    public String getRepoId() {
        return repoId;
    }

    /** @return the revision asked for */
    public String getRevision() {
        return revision;
    }

    /** @return the missing repository file, or {@code null} when no snapshot is cached */
    public String getFilename() {
        return filename;
    }

    /** @return the cache path that does not exist */
    public Path getMissingPath() {
        return missingPath;
    }
}
