package io.github.djlllmzoo.cli;

import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The model the commands use when no {@code --model} is given: the story model committed in the
 * project's {@code models/default} (see its {@code README.md} for the command that trains it). The
 * project root comes from the system property {@value #HOME_PROPERTY}, which {@code bin/llmzoo} sets.
 */
final class DefaultModel {

    /** The system property naming the project root. */
    static final String HOME_PROPERTY = "llmzoo.home";

    /** The default model's directory, relative to the project root. */
    static final Path RELATIVE_DIR = Path.of("models", "default");

    private DefaultModel() {}

    /**
     * Returns the default model's directory.
     *
     * @return {@code $llmzoo.home/models/default}
     * @throws IllegalStateException if the property is unset or the directory holds no {@code
     *     config.json}, with a message saying what to pass instead
     */
    static Path directory() {
        String home = System.getProperty(HOME_PROPERTY);
        if (home == null || home.isBlank()) {
            throw new IllegalStateException(
                    "no --model given and the system property " + HOME_PROPERTY
                            + " (the project root, set by bin/llmzoo) is unset; pass --model M");
        }
        Path dir = Path.of(home).resolve(RELATIVE_DIR);
        if (!Files.isRegularFile(dir.resolve(CheckpointFiles.CONFIG))) {
            throw new IllegalStateException(
                    "no --model given and the default model " + dir + " has no config.json; pass --model M, "
                            + "or train it with 'bin/llmzoo make-default-model --out " + dir + "'");
        }
        return dir;
    }
}
