package io.github.djlllmzoo.zoo.hub;

import ai.djl.repository.zoo.ModelNotFoundException;

/** The hub has no such repository, revision, or file (HTTP 404 or absent from the file list). */
public class HubFileNotFoundException extends ModelNotFoundException {

    private static final long serialVersionUID = 1L;

    private final String repoId;
    private final String revision;
    private final String filename;

    /**
     * Creates an exception for something the hub does not have.
     *
     * @param repoId the repository
     * @param revision the revision asked for
     * @param filename the missing file, or {@code null} when the repository or revision is missing
     * @param message what is missing, naming the repository and file
     */
    public HubFileNotFoundException(
            String repoId, String revision, String filename, String message) {
        super(message);
        this.repoId = repoId;
        this.revision = revision;
        this.filename = filename;
    }

    /** @return the repository id */
    public String getRepoId() {
        return repoId;
    }

    /** @return the revision asked for */
    public String getRevision() {
        return revision;
    }

    /** @return the missing file, or {@code null} when the repository or revision is missing */
    public String getFilename() {
        return filename;
    }
}
