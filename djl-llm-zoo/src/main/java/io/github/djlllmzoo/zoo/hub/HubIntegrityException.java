package io.github.djlllmzoo.zoo.hub;

/**
 * A downloaded file does not match the hash or size the hub announced for it. The partial file
 * has been deleted; nothing was added to the cache.
 */
public class HubIntegrityException extends HubException {

    private static final long serialVersionUID = 1L;

    private final String repoId;
    private final String filename;
    private final String expected;
    private final String actual;

    /**
     * Creates an exception for a content mismatch.
     *
     * @param repoId the repository, e.g. {@code openai-community/gpt2}
     * @param filename the file inside the repository
     * @param kind what was compared, e.g. {@code "SHA-256"} or {@code "size"}
     * @param expected the value the hub announced
     * @param actual the value of the downloaded content
     */
    public HubIntegrityException(
            String repoId, String filename, String kind, String expected, String actual) {
        super(
                "Downloaded '"
                        + filename
                        + "' of '"
                        + repoId
                        + "' is corrupt: expected "
                        + kind
                        + ' '
                        + expected
                        + " but got "
                        + actual
                        + "; the partial download was deleted, try again");
        this.repoId = repoId;
        this.filename = filename;
        this.expected = expected;
        this.actual = actual;
    }

    /** @return the repository id */
    public String getRepoId() {
        return repoId;
    }

    /** @return the file inside the repository */
    public String getFilename() {
        return filename;
    }

    /** @return the hash or size the hub announced */
    public String getExpected() {
        return expected;
    }

    /** @return the hash or size of what was downloaded */
    public String getActual() {
        return actual;
    }
}
