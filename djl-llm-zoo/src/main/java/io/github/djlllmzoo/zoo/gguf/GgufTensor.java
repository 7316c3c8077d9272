package io.github.djlllmzoo.zoo.gguf;

import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.util.Arrays;

/**
 * One tensor of a {@link GgufFile}: its name, ggml dimensions ({@code ne[0]} the contiguous one),
 * type and where its data lies; rows ({@code ne[0]} elements each) are decoded to float32 from the
 * file's memory mapping.
 */
public final class GgufTensor {

    /** The largest window mapped at once (a mapping is limited to 2 GiB). */
    private static final long WINDOW_BYTES = 1L << 30;

    private final GgufFile file;
    private final String name;
    private final long[] dims;
    private final GgufType type;
    private final long offset;
    private ByteBuffer window;
    private long windowStart = -1;

    GgufTensor(GgufFile file, String name, long[] dims, GgufType type, long offset) {
        this.file = file;
        this.name = name;
        this.dims = dims;
        this.type = type;
        this.offset = offset;
    }

    /** @return the tensor's name, e.g. {@code blk.0.attn_q.weight} */
    public String name() {
        return name;
    }

    /** @return ggml's dimensions, contiguous first ({@code ne[0]}, {@code ne[1]}, ...) */
    public long[] dims() {
        return dims.clone();
    }

    /** @return the shape in PyTorch's order (the reverse of {@link #dims()}) */
    public Shape shape() {
        long[] reversed = new long[dims.length];
        for (int i = 0; i < dims.length; i++) {
            reversed[i] = dims[dims.length - 1 - i];
        }
        return new Shape(reversed);
    }

    /** @return the element type */
    public GgufType type() {
        return type;
    }

    /** @return the number of elements */
    public long elements() {
        long n = 1;
        for (long d : dims) {
            n *= d;
        }
        return n;
    }

    /** @return elements per row ({@code ne[0]}) */
    public int rowLength() {
        return Math.toIntExact(dims.length == 0 ? 1 : dims[0]);
    }

    /** @return the number of rows (all dimensions but the first) */
    public long rows() {
        return elements() / rowLength();
    }

    /** @return the bytes of the tensor's data */
    public long bytes() {
        return type.bytes(elements());
    }

    /** @return where the data starts in the file */
    long offset() {
        return offset;
    }

    /**
     * Decodes one row to float32.
     *
     * @param row the row index, in [0, {@link #rows()})
     * @param out receives {@link #rowLength()} values
     * @param at where in {@code out}
     * @throws IOException if the file cannot be mapped
     */
    public synchronized void readRow(long row, float[] out, int at) throws IOException {
        type.decode(rowBytes(row), out, at, rowLength());
    }

    /**
     * The encoded bytes of one row (a read-only little-endian view positioned at the row).
     *
     * @param row the row index
     * @return the view, its position at the row's first byte
     * @throws IOException if the file cannot be mapped
     */
    public synchronized ByteBuffer rowBytes(long row) throws IOException {
        if (row < 0 || row >= rows()) {
            throw new IndexOutOfBoundsException("row " + row + " of " + name + " (" + rows() + " rows)");
        }
        long rowBytes = type.bytes(rowLength());
        long start = offset + row * rowBytes;
        if (window == null || start < windowStart || start + rowBytes > windowStart + window.capacity()) {
            long end = offset + bytes();
            long rowsPerWindow = Math.max(1, WINDOW_BYTES / rowBytes);
            long size = Math.min(end - start, rowsPerWindow * rowBytes);
            window = file.channel().map(FileChannel.MapMode.READ_ONLY, start, size).order(ByteOrder.LITTLE_ENDIAN);
            windowStart = start;
        }
        return window.duplicate().order(ByteOrder.LITTLE_ENDIAN).position(Math.toIntExact(start - windowStart));
    }

    /**
     * Decodes the whole tensor to float32.
     *
     * @return the values, ggml's order (row major over {@link #shape()})
     * @throws IOException if the file cannot be mapped
     */
    public float[] toFloatArray() throws IOException {
        float[] values = new float[Math.toIntExact(elements())];
        int length = rowLength();
        for (long r = 0; r < rows(); r++) {
            readRow(r, values, Math.toIntExact(r * length));
        }
        return values;
    }

    @Override
    public String toString() {
        return name + " " + type + " " + Arrays.toString(dims);
    }
}
