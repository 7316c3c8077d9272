package io.github.djlllmzoo.server;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The API keys a server accepts ({@link ServerOptions#apiKeys()}) and the check of a request's
 * {@code Authorization: Bearer KEY} header against them.
 *
 * <p>The check takes the same time whichever key is presented: the presented key and the accepted
 * ones are compared as SHA-256 digests (equal lengths, so a key's length does not show) with
 * {@link MessageDigest#isEqual}, which does not stop at the first differing byte, and every
 * accepted key is compared (so which one matched does not show). Only the digests are kept.
 */
final class ApiKeys {

    private static final String SCHEME = "bearer ";

    private final List<byte[]> digests = new ArrayList<>();

    /** @param keys the accepted keys; none leaves every request allowed */
    ApiKeys(List<String> keys) {
        for (String key : keys) {
            digests.add(digest(key));
        }
    }

    /** @return whether requests must present a key */
    boolean required() {
        return !digests.isEmpty();
    }

    /**
     * Checks a request's {@code Authorization} header.
     *
     * @param authorization the header's value, or {@code null} when absent
     * @throws ApiException 401 with an OpenAI {@code invalid_api_key} error when a key is required
     *     and the header does not carry an accepted one
     */
    void check(String authorization) {
        if (!required()) {
            return;
        }
        if (authorization == null
                || authorization.length() <= SCHEME.length()
                || !authorization.substring(0, SCHEME.length()).toLowerCase(Locale.ROOT).equals(SCHEME)) {
            throw unauthorized(
                    "You didn't provide an API key. You need to provide your API key in an"
                            + " Authorization header using Bearer auth (i.e. Authorization: Bearer"
                            + " YOUR_KEY).");
        }
        byte[] presented = digest(authorization.substring(SCHEME.length()).strip());
        boolean accepted = false;
        for (byte[] digest : digests) {
            accepted |= MessageDigest.isEqual(digest, presented);
        }
        if (!accepted) {
            throw unauthorized("Incorrect API key provided.");
        }
    }

    private static ApiException unauthorized(String message) {
        return new ApiException(401, "invalid_request_error", null, "invalid_api_key", message);
    }

    private static byte[] digest(String key) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }
}
