package io.github.djlllmzoo.zoo.hub;

import ai.djl.repository.zoo.ModelNotFoundException;

/**
 * The hub refused access (HTTP 401 or 403): the model is gated or private and the request carried
 * no token, or a token without access. The message says how to get access.
 */
public class GatedModelException extends ModelNotFoundException {

    private static final long serialVersionUID = 1L;

    private final String repoId;
    private final int status;

    /**
     * Creates an exception for a refused request.
     *
     * @param repoId the repository, e.g. {@code meta-llama/Llama-3.2-1B}
     * @param endpoint the hub endpoint, e.g. {@code https://huggingface.co}
     * @param status the HTTP status, 401 or 403
     * @param tokenSent whether a token was sent with the request
     */
    public GatedModelException(String repoId, String endpoint, int status, boolean tokenSent) {
        super(message(repoId, endpoint, status, tokenSent));
        this.repoId = repoId;
        this.status = status;
    }

    private static String message(String repoId, String endpoint, int status, boolean tokenSent) {
        return "Model '"
                + repoId
                + "' is gated or private (HTTP "
                + status
                + (tokenSent ? ", the token sent has no access to it" : ", no token was sent")
                + "). To get access, log in at "
                + endpoint
                + ", accept the licence or request access at "
                + endpoint
                + '/'
                + repoId
                + ", create a read token at "
                + endpoint
                + "/settings/tokens and set it in the HF_TOKEN environment variable."
                + " If the model does not exist, check its name.";
    }

    /** @return the repository id */
    public String getRepoId() {
        return repoId;
    }

    /** @return the HTTP status the hub answered, 401 or 403 */
    public int getStatus() {
        return status;
    }
}
