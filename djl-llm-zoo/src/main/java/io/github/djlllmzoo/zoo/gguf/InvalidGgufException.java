package io.github.djlllmzoo.zoo.gguf;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.nio.file.Path;

/**
 * A GGUF file that is malformed, or that holds something this project does not load: the message
 * names the file and the metadata key, tensor, tensor type or architecture at fault.
 */
public final class InvalidGgufException extends InvalidCheckpointException {

    private static final long serialVersionUID = 1L;

    /**
     * @param file the GGUF file
     * @param field the metadata key or tensor name at fault, or {@code null} for the whole file
     * @param message what is wrong
     */
    public InvalidGgufException(Path file, String field, String message) {
        super(file, field, message);
    }

    /**
     * @param file the GGUF file
     * @param field the metadata key or tensor name at fault, or {@code null} for the whole file
     * @param message what is wrong
     * @param cause the underlying error
     */
    public InvalidGgufException(Path file, String field, String message, Throwable cause) {
        super(file, field, message, cause);
    }
}
