package io.github.djlllmzoo.training;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.UUID;

/**
 * Publishes a directory all at once: its content is written into a hidden sibling {@code
 * .<name>.tmp-<random>}, which is then renamed to the target. An existing target is first renamed
 * aside and deleted only after the new one is in place, so the target path names a complete
 * directory (the old one or the new one) at every moment but the instant between the two renames,
 * and never a partly written one. On failure the temporary directory is deleted and an existing
 * target is left as it was.
 */
public final class AtomicDirectory {

    /** Writes a directory's content. */
    @FunctionalInterface
    public interface Content {
        /**
         * @param dir the empty directory to fill
         * @throws IOException if writing fails
         */
        void writeTo(Path dir) throws IOException;
    }

    private AtomicDirectory() {}

    /**
     * Creates or replaces {@code target} with the directory {@code content} writes.
     *
     * @param target the directory to publish
     * @param content what to put in it
     * @throws IOException if writing or renaming fails (the target is then unchanged)
     */
    public static void publish(Path target, Content content) throws IOException {
        Path absolute = target.toAbsolutePath().normalize();
        Path parent = absolute.getParent();
        Files.createDirectories(parent);
        String name = absolute.getFileName().toString();
        Path temp = Files.createDirectory(parent.resolve("." + name + ".tmp-" + UUID.randomUUID()));
        try {
            content.writeTo(temp);
            if (Files.exists(absolute)) {
                Path old = parent.resolve("." + name + ".old-" + UUID.randomUUID());
                Files.move(absolute, old, StandardCopyOption.ATOMIC_MOVE);
                try {
                    Files.move(temp, absolute, StandardCopyOption.ATOMIC_MOVE);
                } catch (IOException | RuntimeException e) {
                    Files.move(old, absolute, StandardCopyOption.ATOMIC_MOVE);
                    throw e;
                }
                deleteRecursively(old);
            } else {
                Files.move(temp, absolute, StandardCopyOption.ATOMIC_MOVE);
            }
        } catch (IOException | RuntimeException | Error e) {
            try {
                deleteRecursively(temp);
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /**
     * Deletes a file or directory tree; a missing path is not an error.
     *
     * @param path the path
     * @throws IOException if something cannot be deleted
     */
    public static void deleteRecursively(Path path) throws IOException {
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        Files.walkFileTree(
                path,
                new SimpleFileVisitor<>() {
                    @Override
                    public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                        Files.deleteIfExists(file);
                        return FileVisitResult.CONTINUE;
                    }

                    @Override
                    public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                        if (e != null && !(e instanceof NoSuchFileException)) {
                            throw e;
                        }
                        Files.deleteIfExists(dir);
                        return FileVisitResult.CONTINUE;
                    }
                });
    }
}
