package io.github.djlllmzoo.defaultmodel;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/** Writes files through a temporary sibling and a rename, so readers never see half a file. */
final class AtomicFiles {

    private AtomicFiles() {}

    /**
     * Writes {@code text} as UTF-8 to {@code file}, creating parent directories.
     *
     * @param file the file to create or replace
     * @param text its content
     * @throws IOException if writing fails (the target is then left as it was)
     */
    static void writeString(Path file, String text) throws IOException {
        Path target = file.toAbsolutePath();
        Files.createDirectories(target.getParent());
        Path tmp = tempSibling(target);
        try {
            Files.writeString(tmp, text, StandardCharsets.UTF_8);
            move(tmp, target);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** Creates an empty temporary file next to {@code target} (same directory, same file system). */
    static Path tempSibling(Path target) throws IOException {
        return Files.createTempFile(target.getParent(), "." + target.getFileName() + ".", ".tmp");
    }

    /** Moves {@code from} over {@code to}, atomically where the file system supports it. */
    static void move(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(from, to, StandardCopyOption.REPLACE_EXISTING);
        }
    }
}
