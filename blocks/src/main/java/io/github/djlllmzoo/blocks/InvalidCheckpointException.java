package io.github.djlllmzoo.blocks;

import ai.djl.MalformedModelException;
import java.nio.file.Path;

/**
 * A checkpoint file (config, weights, index, tokenizer) is not what it claims to be. The message
 * always names the file and, where one is at fault, the field or tensor.
 */
public class InvalidCheckpointException extends MalformedModelException {

    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final String field;

    /**
     * Creates an exception for a problem in {@code file}.
     *
     * @param file the file at fault (may be {@code null} for in-memory data)
     * @param field the JSON field or tensor name at fault, or {@code null} for the whole file
     * @param message what is wrong, e.g. "expected shape [64, 192] but found [64, 190]"
     */
    public InvalidCheckpointException(Path file, String field, String message) {
        this(file, field, message, null);
    }

    /**
     * Creates an exception for a problem in {@code file} caused by {@code cause}.
     *
     * @param file the file at fault (may be {@code null} for in-memory data)
     * @param field the JSON field or tensor name at fault, or {@code null}
     * @param message what is wrong
     * @param cause the underlying error
     */
    public InvalidCheckpointException(Path file, String field, String message, Throwable cause) {
        super(format(file, field, message), cause);
        this.file = file;
        this.field = field;
    }

    private static String format(Path file, String field, String message) {
        StringBuilder sb = new StringBuilder();
        sb.append(file == null ? "<memory>" : file.toString());
        if (field != null) {
            sb.append(": '").append(field).append('\'');
        }
        return sb.append(": ").append(message).toString();
    }

    /** @return the file at fault, or {@code null} */
    public Path getFile() {
        return file;
    }

    /** @return the field or tensor at fault, or {@code null} when the whole file is at fault */
    public String getField() {
        return field;
    }
}
