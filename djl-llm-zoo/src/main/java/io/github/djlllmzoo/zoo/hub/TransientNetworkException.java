package io.github.djlllmzoo.zoo.hub;

import java.io.IOException;

/**
 * The network failed in a way worth retrying or falling back to the cache for: no connection, a
 * timeout, a dropped or stalled transfer, or a 5xx answer.
 */
final class TransientNetworkException extends IOException {

    private static final long serialVersionUID = 1L;

    TransientNetworkException(String message, Throwable cause) {
        super(message, cause);
    }
}
