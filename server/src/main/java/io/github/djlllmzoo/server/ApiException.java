package io.github.djlllmzoo.server;

/**
 * A request the server answers with an OpenAI-style error: an HTTP status and the body {@code
 * {"error": {"message", "type", "param", "code"}}}.
 */
public final class ApiException extends RuntimeException {

    private final int status;
    private final String type;
    private final String param;
    private final String code;

    /**
     * @param status the HTTP status
     * @param type the error type, e.g. {@code invalid_request_error}
     * @param param the request field at fault, or {@code null}
     * @param code a machine-readable code, or {@code null}
     * @param message what is wrong, for people
     */
    public ApiException(int status, String type, String param, String code, String message) {
        super(message);
        this.status = status;
        this.type = type;
        this.param = param;
        this.code = code;
    }

    /**
     * A malformed or unsupported request (400).
     *
     * @param param the request field at fault, or {@code null}
     * @param message what is wrong
     * @return the exception
     */
    public static ApiException invalid(String param, String message) {
        return new ApiException(400, "invalid_request_error", param, null, message);
    }

    /** @return the HTTP status */
    public int status() {
        return status;
    }

    /** @return the error type */
    public String type() {
        return type;
    }

    /** @return the request field at fault, or {@code null} */
    public String param() {
        return param;
    }

    /** @return the machine-readable code, or {@code null} */
    public String code() {
        return code;
    }
}
