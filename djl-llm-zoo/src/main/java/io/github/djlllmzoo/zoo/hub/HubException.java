package io.github.djlllmzoo.zoo.hub;

import java.io.IOException;

/**
 * The Hugging Face hub answered something this client cannot use: an unexpected HTTP status, a
 * missing header, an unsafe file name, or a download that kept failing after its retries.
 */
public class HubException extends IOException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates an exception with a message.
     *
     * @param message what went wrong, naming the repo and file concerned
     */
    public HubException(String message) {
        super(message);
    }

    /**
     * Creates an exception with a message and a cause.
     *
     * @param message what went wrong, naming the repo and file concerned
     * @param cause the underlying error
     */
    public HubException(String message, Throwable cause) {
        super(message, cause);
    }
}
