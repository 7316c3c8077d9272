package io.github.djlllmzoo.zoo.hub;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Exclusive lock on one blob, held across threads of this JVM (a {@link ReentrantLock} per lock
 * file) and across processes ({@link FileChannel#lock()} on the lock file).
 */
final class BlobLock implements AutoCloseable {

    private static final ConcurrentMap<Path, ReentrantLock> JVM_LOCKS = new ConcurrentHashMap<>();

    private final ReentrantLock jvmLock;
    private final FileChannel channel;
    private final FileLock fileLock;

    private BlobLock(ReentrantLock jvmLock, FileChannel channel, FileLock fileLock) {
        this.jvmLock = jvmLock;
        this.channel = channel;
        this.fileLock = fileLock;
    }

    /** Blocks until this thread holds the lock on {@code lockFile}, creating it if needed. */
    static BlobLock acquire(Path lockFile) throws IOException {
        Path key = lockFile.toAbsolutePath().normalize();
        ReentrantLock jvmLock = JVM_LOCKS.computeIfAbsent(key, k -> new ReentrantLock());
        try {
            jvmLock.lockInterruptibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("Interrupted while waiting for the lock " + key);
        }
        try {
            Files.createDirectories(key.getParent());
            FileChannel channel =
                    FileChannel.open(key, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            try {
                return new BlobLock(jvmLock, channel, channel.lock());
            } catch (IOException | RuntimeException e) {
                channel.close();
                throw e;
            }
        } catch (IOException | RuntimeException e) {
            jvmLock.unlock();
            throw e;
        }
    }

    @Override
    public void close() throws IOException {
        try {
            try {
                fileLock.release();
            } finally {
                channel.close();
            }
        } finally {
            jvmLock.unlock();
        }
    }
}
