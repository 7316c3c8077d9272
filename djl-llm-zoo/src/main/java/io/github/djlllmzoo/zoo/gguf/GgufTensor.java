package io.github.djlllmzoo.zoo.gguf;

import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * One tensor of a {@link GgufFile}: its name, ggml dimensions ({@code ne[0]} the contiguous one),
 * type and where its data lies; rows ({@code ne[0]} elements each) are decoded to float32 from the
 * file's bytes, read through the file's {@link FileWindow}.
 */
public final class GgufTensor {

    private final GgufFile file;
    private final String name;
    private final long[] dims;
    private final GgufType type;
    private final long offset;

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
     * @throws IOException if the file cannot be read
     */
    public void readRow(long row, float[] out, int at) throws IOException {
        synchronized (file.window()) { // the row's view is valid until the file's next read
            type.decode(rowBytes(row), out, at, rowLength());
        }
    }

    /**
     * The encoded bytes of one row, read from the file with the rows after it (up to the file's
     * {@link FileWindow}), unless an earlier read brought them.
     *
     * @param row the row index
     * @return a read-only little-endian view, its position at the row's first byte and its limit at
     *     the row's end; valid until the next read from this file (by any of its tensors)
     * @throws IOException if the file cannot be read
     */
    public ByteBuffer rowBytes(long row) throws IOException {
        if (row < 0 || row >= rows()) {
            throw new IndexOutOfBoundsException("row " + row + " of " + name + " (" + rows() + " rows)");
        }
        long rowBytes = type.bytes(rowLength());
        return file.window().view(offset + row * rowBytes, Math.toIntExact(rowBytes), offset + bytes());
    }

    /**
     * Decodes the whole tensor to float32.
     *
     * @return the values, ggml's order (row major over {@link #shape()})
     * @throws IOException if the file cannot be read
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
