package io.github.djlllmzoo.constrained;

/**
 * A constraint that cannot be compiled: malformed schema JSON, a schema value of the wrong type,
 * or a regular expression that does not parse. The message names the JSON path (or the position in
 * the expression) at fault.
 */
public class InvalidConstraintException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    private final String path;

    /**
     * @param path where the fault is: a JSON path such as {@code $.properties.age}, or {@code
     *     regex} and a position
     * @param message what is wrong
     */
    public InvalidConstraintException(String path, String message) {
        super(path + ": " + message);
        this.path = path;
    }

    /** @return where the fault is */
    public String path() {
        return path;
    }
}
