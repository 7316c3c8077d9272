package io.github.djlllmzoo.training;

import java.io.IOException;
import java.nio.file.Path;

/** A training or evaluation data file that cannot be used; the message names the file and line. */
public class InvalidTrainingDataException extends IOException {

    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final int line;

    /**
     * @param file the data file
     * @param line the 1-based line at fault, or 0 when the problem is not on one line
     * @param message what is wrong
     */
    public InvalidTrainingDataException(Path file, int line, String message) {
        this(file, line, message, null);
    }

    /**
     * @param file the data file
     * @param line the 1-based line at fault, or 0 when the problem is not on one line
     * @param message what is wrong
     * @param cause the underlying error
     */
    public InvalidTrainingDataException(Path file, int line, String message, Throwable cause) {
        super(file + (line > 0 ? ":" + line : "") + ": " + message, cause);
        this.file = file;
        this.line = line;
    }

    /** @return the data file */
    public Path getFile() {
        return file;
    }

    /** @return the 1-based line at fault, or 0 */
    public int getLine() {
        return line;
    }
}
