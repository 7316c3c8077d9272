package io.github.djlllmzoo.zoo.safetensors;

import ai.djl.ndarray.NDArray;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Writes safetensors files.
 *
 * <p>The header lists {@code __metadata__} first (when there is any), then the tensors in the order
 * given, and is padded with spaces to a multiple of 8 bytes so the data section starts 8-byte
 * aligned. Tensor data follows contiguously in the same order, little-endian and row-major,
 * streamed one tensor at a time.
 *
 * <p>Writing is atomic: the file is written to {@code .<name>.tmp-<random>} in the target's
 * directory, forced to disk, then moved over the target with {@link
 * StandardCopyOption#ATOMIC_MOVE}. On any failure the temporary file is deleted and an existing
 * target is left untouched. Invalid arguments are rejected before any file is created.
 */
public final class SafeTensorsWriter {

    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().create();

    private SafeTensorsWriter() {}

    /**
     * A tensor given as raw bytes, for callers without an {@code NDManager}.
     *
     * <p>The shape is copied on construction and by {@link #shape()}; {@code data} is duplicated,
     * so the caller's buffer position and limit are never changed. Equality compares the shape and
     * the remaining data by content.
     *
     * @param name the tensor name
     * @param dtype the element type
     * @param shape the dimensions; empty for a scalar
     * @param data the tensor's bytes from position to limit, little-endian and row-major, whatever
     *     the buffer's own {@link ByteBuffer#order()}
     */
    public record RawTensor(String name, SafeTensorsDtype dtype, long[] shape, ByteBuffer data) {

        /**
         * Creates a raw tensor; sizes are checked when it is written.
         *
         * @param name the tensor name
         * @param dtype the element type
         * @param shape the dimensions; empty for a scalar
         * @param data the tensor's bytes from position to limit, little-endian and row-major, whatever the buffer's own {@link ByteBuffer#order()}
         */
        public RawTensor {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(dtype, "dtype");
            shape = shape.clone();
            data = data.duplicate();
        }

        /**
         * @return a copy of the dimensions
         */
        @Override
        public long[] shape() {
            return shape.clone();
        }

        /**
         * @return a duplicate of the data buffer
         */
        @Override
        public ByteBuffer data() {
            return data.duplicate();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof RawTensor other
                    && name.equals(other.name)
                    && dtype == other.dtype
                    && Arrays.equals(shape, other.shape)
                    && data.equals(other.data);
        }

        @Override
        public int hashCode() {
            return Objects.hash(name, dtype, Arrays.hashCode(shape), data);
        }

        @Override
        public String toString() {
            return name
                    + " "
                    + dtype
                    + " "
                    + Arrays.toString(shape)
                    + " ("
                    + data.remaining()
                    + " bytes)";
        }
    }

    /** One tensor to write: its header entry and, later, its little-endian bytes. */
    private interface Source {
        String name();

        SafeTensorsDtype dtype();

        long[] shape();

        ByteBuffer littleEndianBytes();
    }

    /**
     * Writes DJL arrays; the map's iteration order is the order in the file.
     *
     * @param file the file to create or replace
     * @param tensors the arrays by name; each array's data type must have a safetensors equivalent
     *     (see {@link SafeTensorsDtype#fromDataType})
     * @param metadata the {@code __metadata__} entries, or {@code null} for none
     * @throws IOException if the file cannot be written
     * @throws IllegalArgumentException if a name is {@code "__metadata__"} or a data type is
     *     unsupported
     */
    public static void write(Path file, Map<String, NDArray> tensors, Map<String, String> metadata)
            throws IOException {
        List<Source> sources = new ArrayList<>(tensors.size());
        for (Map.Entry<String, NDArray> entry : tensors.entrySet()) {
            String name = entry.getKey();
            NDArray array = entry.getValue();
            SafeTensorsDtype dtype = SafeTensorsDtype.fromDataType(array.getDataType());
            if (dtype == null) {
                throw new IllegalArgumentException(
                        "tensor '"
                                + name
                                + "': data type "
                                + array.getDataType()
                                + " has no safetensors equivalent");
            }
            long[] shape = array.getShape().getShape();
            sources.add(
                    new Source() {
                        @Override
                        public String name() {
                            return name;
                        }

                        @Override
                        public SafeTensorsDtype dtype() {
                            return dtype;
                        }

                        @Override
                        public long[] shape() {
                            return shape;
                        }

                        @Override
                        public ByteBuffer littleEndianBytes() {
                            ByteBuffer bytes = array.toByteBuffer();
                            if (ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN) {
                                return bytes;
                            }
                            ByteBuffer swapped =
                                    ByteBuffer.allocate(bytes.remaining())
                                            .order(ByteOrder.LITTLE_ENDIAN);
                            SafeTensorsReader.reorder(
                                    bytes.order(ByteOrder.nativeOrder()),
                                    dtype.byteSize(),
                                    swapped);
                            return swapped.flip();
                        }
                    });
        }
        writeSources(file, sources, metadata);
    }

    /**
     * Writes raw tensors in list order.
     *
     * @param file the file to create or replace
     * @param tensors the tensors; names must be unique
     * @param metadata the {@code __metadata__} entries, or {@code null} for none
     * @throws IOException if the file cannot be written
     * @throws IllegalArgumentException if a name repeats or is {@code "__metadata__"}, a dimension
     *     is negative, or a tensor's data size disagrees with its shape and dtype
     */
    public static void write(Path file, List<RawTensor> tensors, Map<String, String> metadata)
            throws IOException {
        List<Source> sources = new ArrayList<>(tensors.size());
        for (RawTensor tensor : tensors) {
            sources.add(
                    new Source() {
                        @Override
                        public String name() {
                            return tensor.name();
                        }

                        @Override
                        public SafeTensorsDtype dtype() {
                            return tensor.dtype();
                        }

                        @Override
                        public long[] shape() {
                            return tensor.shape();
                        }

                        @Override
                        public ByteBuffer littleEndianBytes() {
                            return tensor.data();
                        }
                    });
        }
        for (RawTensor tensor : tensors) {
            long expected = byteSize(tensor.name(), tensor.dtype(), tensor.shape());
            if (tensor.data.remaining() != expected) {
                throw new IllegalArgumentException(
                        "tensor '"
                                + tensor.name()
                                + "': shape "
                                + Arrays.toString(tensor.shape)
                                + " of "
                                + tensor.dtype()
                                + " needs "
                                + expected
                                + " bytes but data has "
                                + tensor.data.remaining());
            }
        }
        writeSources(file, sources, metadata);
    }

    private static long byteSize(String name, SafeTensorsDtype dtype, long[] shape) {
        long count = 1;
        for (long dim : shape) {
            if (dim < 0) {
                throw new IllegalArgumentException(
                        "tensor '" + name + "': negative dimension in " + Arrays.toString(shape));
            }
            count = Math.multiplyExact(count, dim);
        }
        return Math.multiplyExact(count, dtype.byteSize());
    }

    private static void writeSources(Path file, List<Source> sources, Map<String, String> metadata)
            throws IOException {
        ByteBuffer header = header(sources, metadata == null ? Map.of() : metadata);
        Path target = file.toAbsolutePath();
        Path temp =
                target.resolveSibling(
                        "."
                                + target.getFileName()
                                + ".tmp-"
                                + Long.toUnsignedString(
                                        ThreadLocalRandom.current().nextLong(), 36));
        try {
            try (FileChannel channel =
                    FileChannel.open(
                            temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                writeFully(channel, header);
                for (Source source : sources) {
                    long expected = byteSize(source.name(), source.dtype(), source.shape());
                    ByteBuffer bytes = source.littleEndianBytes();
                    if (bytes.remaining() != expected) {
                        throw new IOException(
                                "tensor '"
                                        + source.name()
                                        + "' produced "
                                        + bytes.remaining()
                                        + " bytes, expected "
                                        + expected);
                    }
                    writeFully(channel, bytes);
                }
                channel.force(true);
            }
            Files.move(
                    temp,
                    target,
                    StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
        } catch (Throwable t) {
            try {
                Files.deleteIfExists(temp);
            } catch (IOException suppressed) {
                t.addSuppressed(suppressed);
            }
            throw t;
        }
    }

    /** Builds the 8-byte length prefix and the space-padded JSON header, validating names. */
    private static ByteBuffer header(List<Source> sources, Map<String, String> metadata) {
        JsonObject root = new JsonObject();
        if (!metadata.isEmpty()) {
            JsonObject meta = new JsonObject();
            for (Map.Entry<String, String> entry : metadata.entrySet()) {
                meta.addProperty(
                        Objects.requireNonNull(entry.getKey(), "metadata key"),
                        Objects.requireNonNull(
                                entry.getValue(), "metadata value for " + entry.getKey()));
            }
            root.add(SafeTensorsReader.METADATA_KEY, meta);
        }
        Set<String> names = new HashSet<>();
        long offset = 0;
        for (Source source : sources) {
            String name = Objects.requireNonNull(source.name(), "tensor name");
            if (name.equals(SafeTensorsReader.METADATA_KEY)) {
                throw new IllegalArgumentException(
                        "'" + name + "' is reserved and cannot name a tensor");
            }
            if (!names.add(name)) {
                throw new IllegalArgumentException("tensor '" + name + "' is given twice");
            }
            long[] shape = source.shape();
            long end = Math.addExact(offset, byteSize(name, source.dtype(), shape));
            JsonObject entry = new JsonObject();
            entry.addProperty("dtype", source.dtype().name());
            JsonArray dims = new JsonArray();
            for (long dim : shape) {
                dims.add(dim);
            }
            entry.add("shape", dims);
            JsonArray offsets = new JsonArray();
            offsets.add(offset);
            offsets.add(end);
            entry.add("data_offsets", offsets);
            root.add(name, entry);
            offset = end;
        }
        byte[] json = GSON.toJson(root).getBytes(StandardCharsets.UTF_8);
        int padded = (json.length + 7) & ~7;
        if (padded > SafeTensorsReader.MAX_HEADER_BYTES) {
            throw new IllegalArgumentException(
                    "header of "
                            + padded
                            + " bytes exceeds the limit of "
                            + SafeTensorsReader.MAX_HEADER_BYTES);
        }
        ByteBuffer buffer = ByteBuffer.allocate(8 + padded).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putLong(padded).put(json);
        while (buffer.hasRemaining()) {
            buffer.put((byte) ' ');
        }
        return buffer.flip();
    }

    private static void writeFully(FileChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }
}
