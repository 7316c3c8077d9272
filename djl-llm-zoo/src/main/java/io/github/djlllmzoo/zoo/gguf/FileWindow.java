package io.github.djlllmzoo.zoo.gguf;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;

/**
 * A span of a file read into one reused buffer, for its tensors' rows: read, not memory-mapped, so
 * that the file's pages never count as the process's memory. A mapping is unmapped only when the
 * collector frees its buffer, and the windows of a load kept a whole GGUF file (650 MiB for a 1B
 * model in Q4_K_M) resident beside the weights made from it until the next full collection
 * (docs/PERFORMANCE.md, q4_k resident memory).
 */
final class FileWindow {

    /** Bytes read at once: many rows of any tensor, few enough to stay a small part of a model. */
    static final int BYTES = 4 << 20;

    private final FileChannel channel;
    private final long fileBytes;
    private ByteBuffer buffer;
    /** A read-only view of {@link #buffer}, which each row's view duplicates (one object a row). */
    private ByteBuffer readOnly;
    private long start = -1;

    FileWindow(FileChannel channel, long fileBytes) {
        this.channel = channel;
        this.fileBytes = fileBytes;
    }

    /**
     * The bytes {@code [at, at + length)} of the file, read with as many of the bytes after them, up
     * to {@code end}, as the window holds, unless the window holds them already.
     *
     * @param at the first byte
     * @param length the bytes wanted
     * @param end the end of the span that reads ahead may cover (the tensor's end)
     * @return a read-only little-endian view whose position is byte {@code at} and whose limit is
     *     the end of the {@code length} bytes, valid until the next read from the file
     * @throws IOException if the file cannot be read or ends early
     */
    synchronized ByteBuffer view(long at, int length, long end) throws IOException {
        if (buffer == null || at < start || at + length > start + buffer.limit()) {
            int size = Math.toIntExact(Math.max(length, Math.min(end - at, BYTES)));
            if (buffer == null || buffer.capacity() < size) { // once a file, unless a row is longer
                buffer = ByteBuffer.allocateDirect(Math.toIntExact(Math.max(size, Math.min(BYTES, fileBytes))));
                readOnly = buffer.asReadOnlyBuffer();
            }
            buffer.clear().limit(size);
            start = -1;
            while (buffer.hasRemaining()) {
                if (channel.read(buffer, at + buffer.position()) < 0) {
                    throw new EOFException("the file ends at " + (at + buffer.position()) + ", before byte " + (at + size));
                }
            }
            start = at;
        }
        int from = Math.toIntExact(at - start);
        return readOnly.duplicate().limit(from + length).position(from).order(ByteOrder.LITTLE_ENDIAN);
    }
}
