package io.github.djlllmzoo.zoo.safetensors;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;

import io.github.djlllmzoo.blocks.HalfPrecision;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;

import java.io.EOFException;
import java.io.IOException;
import java.io.StringReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads a safetensors file.
 *
 * <p>{@link #open} reads and validates the whole header before anything is exposed; every format
 * error is an {@link InvalidCheckpointException} naming the file and the tensor (or {@code
 * "header"} / {@code "__metadata__"}) at fault. No allocation is sized by an unchecked header
 * value. Validation follows the format's rules with one relaxation: gaps between tensors (and
 * trailing bytes after the last tensor) are accepted, as some writers produce them, but overlapping
 * tensors are rejected. Zero-byte tensors overlap nothing.
 *
 * <p>Tensors are loaded with positional reads (never mapped, so a loaded model's resident memory
 * is its arrays, not the file's pages too); {@link #rawData} maps one tensor's region for callers
 * that want the bytes in place. Files larger than 2 GiB are supported as long as each tensor is
 * smaller than 2 GiB. Asking for a tensor the file does not
 * contain throws {@link InvalidCheckpointException} naming it: to a model loader a missing weight
 * is a checkpoint that does not match, and {@link #contains} lets callers check first.
 *
 * <p>An open reader is immutable and safe to use from several threads. Buffers returned by {@link
 * #rawData} stay readable after {@link #close()}, until they are garbage-collected.
 */
public final class SafeTensorsReader implements AutoCloseable {

    /** The largest header accepted, in bytes (100 MiB); larger values are treated as corrupt. */
    public static final long MAX_HEADER_BYTES = 100L << 20;

    static final String HEADER_FIELD = "header";
    static final String METADATA_KEY = "__metadata__";
    private static final int LENGTH_PREFIX_BYTES = 8;
    /**
     * Bytes a read that converts a tensor's elements stages at a time: the size of a staging buffer
     * for {@link #readFloats(String, long, float[], ByteBuffer)}.
     */
    public static final int STAGING_BYTES = 1 << 16;

    private final Path file;
    private final FileChannel channel;
    private final long dataStart;
    private final Map<String, TensorInfo> tensors;
    private final Map<String, String> metadata;

    private SafeTensorsReader(
            Path file,
            FileChannel channel,
            long dataStart,
            Map<String, TensorInfo> tensors,
            Map<String, String> metadata) {
        this.file = file;
        this.channel = channel;
        this.dataStart = dataStart;
        this.tensors = Collections.unmodifiableMap(tensors);
        this.metadata = Collections.unmodifiableMap(metadata);
    }

    /**
     * Opens {@code file} and validates its header.
     *
     * @param file the safetensors file
     * @return an open reader; close it to release the file
     * @throws IOException if the file cannot be read
     * @throws InvalidCheckpointException if the file is not a well-formed safetensors file
     */
    public static SafeTensorsReader open(Path file) throws IOException, InvalidCheckpointException {
        FileChannel channel = FileChannel.open(file, StandardOpenOption.READ);
        try {
            return parse(file, channel);
        } catch (Throwable t) {
            try {
                channel.close();
            } catch (IOException suppressed) {
                t.addSuppressed(suppressed);
            }
            throw t;
        }
    }

    private static SafeTensorsReader parse(Path file, FileChannel channel)
            throws IOException, InvalidCheckpointException {
        long fileSize = channel.size();
        if (fileSize < LENGTH_PREFIX_BYTES) {
            throw new InvalidCheckpointException(
                    file,
                    HEADER_FIELD,
                    "file is " + fileSize + " bytes, too short for the 8-byte header length");
        }
        ByteBuffer prefix = ByteBuffer.allocate(LENGTH_PREFIX_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        readFully(channel, prefix, 0);
        long headerLength = prefix.getLong(0);
        long available = fileSize - LENGTH_PREFIX_BYTES;
        if (Long.compareUnsigned(headerLength, available) > 0) {
            throw new InvalidCheckpointException(
                    file,
                    HEADER_FIELD,
                    "header length "
                            + Long.toUnsignedString(headerLength)
                            + " exceeds the "
                            + available
                            + " bytes that follow the length prefix");
        }
        if (headerLength > MAX_HEADER_BYTES) {
            throw new InvalidCheckpointException(
                    file,
                    HEADER_FIELD,
                    "header length " + headerLength + " exceeds the limit of " + MAX_HEADER_BYTES);
        }
        ByteBuffer headerBytes = ByteBuffer.allocate((int) headerLength);
        readFully(channel, headerBytes, LENGTH_PREFIX_BYTES);
        headerBytes.flip();
        String json = decodeUtf8(file, headerBytes);
        Map<String, JsonElement> entries = parseTopLevel(file, json);

        long dataStart = LENGTH_PREFIX_BYTES + headerLength;
        long dataSize = fileSize - dataStart;
        Map<String, TensorInfo> tensors = new LinkedHashMap<>();
        Map<String, String> metadata = new LinkedHashMap<>();
        for (Map.Entry<String, JsonElement> entry : entries.entrySet()) {
            if (METADATA_KEY.equals(entry.getKey())) {
                metadata = parseMetadata(file, entry.getValue());
            } else {
                TensorInfo info = parseTensor(file, entry.getKey(), entry.getValue(), dataSize);
                tensors.put(info.name(), info);
            }
        }
        checkOverlaps(file, tensors);
        return new SafeTensorsReader(file, channel, dataStart, tensors, metadata);
    }

    private static String decodeUtf8(Path file, ByteBuffer bytes)
            throws InvalidCheckpointException {
        try {
            CharBuffer chars =
                    StandardCharsets.UTF_8
                            .newDecoder()
                            .onMalformedInput(CodingErrorAction.REPORT)
                            .onUnmappableCharacter(CodingErrorAction.REPORT)
                            .decode(bytes);
            return chars.toString();
        } catch (CharacterCodingException e) {
            throw new InvalidCheckpointException(
                    file, HEADER_FIELD, "header is not valid UTF-8", e);
        }
    }

    /** Parses the header object, keeping entry order and rejecting duplicate keys. */
    private static Map<String, JsonElement> parseTopLevel(Path file, String json)
            throws InvalidCheckpointException {
        Map<String, JsonElement> entries = new LinkedHashMap<>();
        JsonReader reader = new JsonReader(new StringReader(json));
        reader.setStrictness(Strictness.STRICT);
        try {
            JsonToken first = reader.peek();
            if (first != JsonToken.BEGIN_OBJECT) {
                throw new InvalidCheckpointException(
                        file,
                        HEADER_FIELD,
                        "header is a JSON " + describe(first) + ", not an object");
            }
            reader.beginObject();
            while (reader.hasNext()) {
                String name = reader.nextName();
                JsonElement value = JsonParser.parseReader(reader);
                if (entries.putIfAbsent(name, value) != null) {
                    throw new InvalidCheckpointException(file, name, "appears twice in the header");
                }
            }
            reader.endObject();
            if (reader.peek() != JsonToken.END_DOCUMENT) {
                throw new InvalidCheckpointException(
                        file, HEADER_FIELD, "header has data after the JSON object");
            }
        } catch (IOException | JsonParseException | IllegalStateException e) {
            throw new InvalidCheckpointException(
                    file, HEADER_FIELD, "header is not valid JSON: " + e.getMessage(), e);
        }
        return entries;
    }

    private static String describe(JsonToken token) {
        return switch (token) {
            case BEGIN_ARRAY -> "array";
            case STRING -> "string";
            case NUMBER -> "number";
            case BOOLEAN -> "boolean";
            case NULL -> "null";
            case END_DOCUMENT -> "empty document";
            default -> token.name();
        };
    }

    private static Map<String, String> parseMetadata(Path file, JsonElement value)
            throws InvalidCheckpointException {
        if (!value.isJsonObject()) {
            throw new InvalidCheckpointException(
                    file, METADATA_KEY, "must be a JSON object of strings");
        }
        Map<String, String> metadata = new LinkedHashMap<>();
        for (Map.Entry<String, JsonElement> entry : value.getAsJsonObject().entrySet()) {
            if (!isString(entry.getValue())) {
                throw new InvalidCheckpointException(
                        file,
                        METADATA_KEY,
                        "value of key '"
                                + entry.getKey()
                                + "' is "
                                + entry.getValue()
                                + ", not a string");
            }
            metadata.put(entry.getKey(), entry.getValue().getAsString());
        }
        return metadata;
    }

    private static TensorInfo parseTensor(Path file, String name, JsonElement value, long dataSize)
            throws InvalidCheckpointException {
        if (!value.isJsonObject()) {
            throw new InvalidCheckpointException(file, name, "entry is not a JSON object");
        }
        JsonObject entry = value.getAsJsonObject();
        JsonElement dtypeElement = entry.get("dtype");
        if (dtypeElement == null) {
            throw new InvalidCheckpointException(file, name, "missing \"dtype\"");
        }
        if (!isString(dtypeElement)) {
            throw new InvalidCheckpointException(
                    file, name, "\"dtype\" is " + dtypeElement + ", not a string");
        }
        SafeTensorsDtype dtype = SafeTensorsDtype.fromName(dtypeElement.getAsString());
        if (dtype == null) {
            throw new InvalidCheckpointException(
                    file,
                    name,
                    "unsupported dtype \""
                            + dtypeElement.getAsString()
                            + "\" (supported: "
                            + Arrays.toString(SafeTensorsDtype.values())
                            + ")");
        }
        long[] shape = longArray(file, name, entry, "shape", -1);
        for (long dim : shape) {
            if (dim < 0) {
                throw new InvalidCheckpointException(
                        file, name, "negative dimension in shape " + Arrays.toString(shape));
            }
        }
        long[] offsets = longArray(file, name, entry, "data_offsets", 2);
        long begin = offsets[0];
        long end = offsets[1];
        if (begin < 0 || end < 0) {
            throw new InvalidCheckpointException(
                    file, name, "negative data_offsets " + Arrays.toString(offsets));
        }
        if (begin > end) {
            throw new InvalidCheckpointException(
                    file, name, "data_offsets begin " + begin + " is after end " + end);
        }
        if (end > dataSize) {
            throw new InvalidCheckpointException(
                    file,
                    name,
                    "data_offsets end "
                            + end
                            + " is beyond the data section of "
                            + dataSize
                            + " bytes");
        }
        TensorInfo info = new TensorInfo(name, dtype, shape, begin, end);
        long expected;
        try {
            expected = info.byteSize();
        } catch (ArithmeticException e) {
            throw new InvalidCheckpointException(
                    file,
                    name,
                    "size of shape " + Arrays.toString(shape) + " of " + dtype + " overflows",
                    e);
        }
        if (expected != end - begin) {
            throw new InvalidCheckpointException(
                    file,
                    name,
                    "shape "
                            + Arrays.toString(shape)
                            + " of "
                            + dtype
                            + " needs "
                            + expected
                            + " bytes but data_offsets span "
                            + (end - begin));
        }
        return info;
    }

    /** Reads {@code entry[key]} as an array of longs, of {@code length} elements unless -1. */
    private static long[] longArray(
            Path file, String name, JsonObject entry, String key, int length)
            throws InvalidCheckpointException {
        JsonElement element = entry.get(key);
        if (element == null) {
            throw new InvalidCheckpointException(file, name, "missing \"" + key + "\"");
        }
        if (!element.isJsonArray()) {
            throw new InvalidCheckpointException(
                    file, name, "\"" + key + "\" is " + element + ", not an array");
        }
        JsonArray array = element.getAsJsonArray();
        if (length >= 0 && array.size() != length) {
            throw new InvalidCheckpointException(
                    file,
                    name,
                    "\"" + key + "\" has " + array.size() + " elements, expected " + length);
        }
        long[] values = new long[array.size()];
        for (int i = 0; i < values.length; i++) {
            JsonElement item = array.get(i);
            if (!item.isJsonPrimitive() || !item.getAsJsonPrimitive().isNumber()) {
                throw new InvalidCheckpointException(
                        file, name, "\"" + key + "\" contains " + item + ", not an integer");
            }
            String text = item.getAsJsonPrimitive().getAsString();
            try {
                values[i] = Long.parseLong(text);
            } catch (NumberFormatException e) {
                throw new InvalidCheckpointException(
                        file,
                        name,
                        "\"" + key + "\" contains " + text + ", not a 64-bit integer",
                        e);
            }
        }
        return values;
    }

    private static boolean isString(JsonElement element) {
        return element.isJsonPrimitive() && ((JsonPrimitive) element).isString();
    }

    private static void checkOverlaps(Path file, Map<String, TensorInfo> tensors)
            throws InvalidCheckpointException {
        List<TensorInfo> sorted = new ArrayList<>(tensors.values());
        sorted.sort(Comparator.comparingLong(TensorInfo::begin).thenComparingLong(TensorInfo::end));
        TensorInfo furthest = null;
        for (TensorInfo info : sorted) {
            if (info.begin() == info.end()) {
                continue;
            }
            if (furthest != null && info.begin() < furthest.end()) {
                throw new InvalidCheckpointException(
                        file,
                        info.name(),
                        "bytes ["
                                + info.begin()
                                + ", "
                                + info.end()
                                + ") overlap tensor '"
                                + furthest.name()
                                + "' at ["
                                + furthest.begin()
                                + ", "
                                + furthest.end()
                                + ")");
            }
            if (furthest == null || info.end() > furthest.end()) {
                furthest = info;
            }
        }
    }

    private static void readFully(FileChannel channel, ByteBuffer buffer, long position)
            throws IOException {
        long pos = position;
        while (buffer.hasRemaining()) {
            int read = channel.read(buffer, pos);
            if (read < 0) {
                throw new EOFException("unexpected end of file at byte " + pos);
            }
            pos += read;
        }
    }

    /**
     * @return the file this reader reads
     */
    public Path file() {
        return file;
    }

    /**
     * @return the tensors in header order, by name (unmodifiable)
     */
    public Map<String, TensorInfo> tensors() {
        return tensors;
    }

    /**
     * @return the {@code __metadata__} entries in header order (unmodifiable; empty if absent)
     */
    public Map<String, String> metadata() {
        return metadata;
    }

    /**
     * @param name a tensor name
     * @return whether the file contains a tensor of that name
     */
    public boolean contains(String name) {
        return tensors.containsKey(name);
    }

    private TensorInfo info(String name) throws InvalidCheckpointException {
        TensorInfo info = tensors.get(name);
        if (info == null) {
            throw new InvalidCheckpointException(
                    file, name, "no such tensor (the file has " + tensors.size() + ")");
        }
        return info;
    }

    /**
     * Maps one tensor's bytes.
     *
     * @param name the tensor name
     * @return a read-only, little-endian buffer over exactly the tensor's bytes, row-major
     * @throws InvalidCheckpointException if the file has no such tensor
     * @throws IOException if the region cannot be mapped, the tensor is 2 GiB or larger, or the
     *     reader is closed ({@link java.nio.channels.ClosedChannelException})
     */
    public ByteBuffer rawData(String name) throws IOException, InvalidCheckpointException {
        TensorInfo info = info(name);
        long size = info.end() - info.begin();
        if (size > Integer.MAX_VALUE) {
            throw new IOException(
                    file
                            + ": '"
                            + name
                            + "': tensor is "
                            + size
                            + " bytes; tensors of 2 GiB or more cannot be mapped into one buffer");
        }
        if (size == 0) {
            return ByteBuffer.allocate(0).asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
        }
        return channel.map(FileChannel.MapMode.READ_ONLY, dataStart + info.begin(), size)
                .order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Loads a tensor in its stored type, except where the engine cannot hold that type (BF16 and
     * I16 on PyTorch), which load as FLOAT32. See {@link #load(String, NDManager, DataType)}.
     *
     * @param name the tensor name
     * @param manager the manager that will own the array
     * @return a new array with the tensor's shape
     * @throws IOException if the data cannot be read
     * @throws InvalidCheckpointException if the file has no such tensor
     */
    public NDArray load(String name, NDManager manager)
            throws IOException, InvalidCheckpointException {
        DataType stored = info(name).dtype().toDataType();
        return load(name, manager, engineHolds(manager, stored) ? stored : DataType.FLOAT32);
    }

    /**
     * Loads a tensor as a new array of type {@code target}, read from the file with positional reads
     * straight into the array's memory (converted through a small buffer where the types differ):
     * nothing is mapped, so the file's pages never count as this process's memory, and no copy of
     * the tensor but the array is made.
     *
     * <ul>
     *   <li>{@code target} equal to the stored type: the bytes pass through unchanged (F16 stays
     *       FLOAT16 bit for bit).
     *   <li>{@code target} FLOAT32 or FLOAT64: converted in Java from any stored type; F16 and BF16
     *       widen exactly (subnormals, signed zeros, infinities and NaN included), F64 to FLOAT32
     *       rounds to nearest.
     *   <li>any other {@code target}: cast by the engine from the stored type (from FLOAT32 when
     *       the engine cannot hold the stored type; both BF16 and I16 widen to it exactly).
     * </ul>
     *
     * <p>DJL 0.35.1's PyTorch engine aborts the JVM (native {@code std::terminate}) when asked to
     * create or cast to BFLOAT16 or INT16, so those targets are refused up front for PyTorch.
     *
     * @param name the tensor name
     * @param manager the manager that will own the array
     * @param target the data type of the array; one of the types {@link SafeTensorsDtype} maps to
     * @return a new array with the tensor's shape
     * @throws IOException if the data cannot be read, or the tensor is 2 GiB or larger
     * @throws InvalidCheckpointException if the file has no such tensor
     * @throws IllegalArgumentException if {@code target} is not a safetensors type or the manager's
     *     engine cannot hold it
     */
    public NDArray load(String name, NDManager manager, DataType target)
            throws IOException, InvalidCheckpointException {
        TensorInfo info = info(name);
        if (SafeTensorsDtype.fromDataType(target) == null) {
            throw new IllegalArgumentException(
                    "cannot load '" + name + "' as " + target + ": not a safetensors data type");
        }
        if (!engineHolds(manager, target)) {
            throw new IllegalArgumentException(
                    "cannot load '"
                            + name
                            + "' as "
                            + target
                            + ": the "
                            + manager.getEngine().getEngineName()
                            + " engine cannot create arrays of that type");
        }
        DataType stored = info.dtype().toDataType();
        Shape shape = info.toShape();
        if (target == stored || target == DataType.FLOAT32 || target == DataType.FLOAT64) {
            return manager.create(readAs(info, manager, target), shape, target);
        }
        DataType via = engineHolds(manager, stored) ? stored : DataType.FLOAT32;
        NDArray carrier = manager.create(readAs(info, manager, via), shape, via);
        try (carrier) {
            return carrier.toType(target, true);
        }
    }

    /**
     * Reads a tensor as floats, converting from any stored type (integers beyond 2^24 round).
     *
     * @param name the tensor name
     * @return the elements in row-major order
     * @throws IOException if the data cannot be read
     * @throws InvalidCheckpointException if the file has no such tensor
     */
    public float[] toFloatArray(String name) throws IOException, InvalidCheckpointException {
        TensorInfo info = info(name);
        ByteBuffer source = rawData(name);
        float[] values = new float[Math.toIntExact(info.numElements())];
        fillFloats(info.dtype(), source, FloatBuffer.wrap(values));
        return values;
    }

    /**
     * Reads part of a tensor's bytes with a positional read of the file (no memory mapping, so the
     * file's pages never count as this process's memory).
     *
     * @param name the tensor name
     * @param byteOffset where in the tensor's bytes to start
     * @param into receives its remaining bytes' worth, little-endian as stored
     * @throws IOException if the data cannot be read or the range passes the tensor's end
     * @throws InvalidCheckpointException if the file has no such tensor
     */
    public void read(String name, long byteOffset, ByteBuffer into) throws IOException, InvalidCheckpointException {
        TensorInfo info = info(name);
        checkRange(info, byteOffset, into.remaining());
        readFully(channel, into, dataStart + info.begin() + byteOffset);
    }

    private void checkRange(TensorInfo info, long byteOffset, long length) throws IOException {
        long size = info.end() - info.begin();
        if (byteOffset < 0 || byteOffset + length > size) {
            throw new IOException(
                    file + ": '" + info.name() + "': bytes [" + byteOffset + ", " + (byteOffset + length)
                            + ") are outside the tensor's " + size);
        }
    }

    /** Bytes a converting read stages at a time: whole elements, at most 64 KiB, at most the data. */
    private static int stagingBytes(int elementSize, long dataBytes) {
        long bytes = Math.min(STAGING_BYTES / elementSize * elementSize, dataBytes);
        return (int) Math.max(elementSize, bytes);
    }

    /**
     * A tensor's elements as {@code target} (its stored type, FLOAT32 or FLOAT64) in a new direct
     * buffer in native order, read with positional reads: straight into the buffer where the bytes
     * need no change, else through one staging buffer of at most {@link #STAGING_BYTES}.
     */
    private ByteBuffer readAs(TensorInfo info, NDManager manager, DataType target) throws IOException {
        long bytes = info.end() - info.begin();
        if (bytes > Integer.MAX_VALUE) {
            throw new IOException(
                    file + ": '" + info.name() + "': tensor is " + bytes
                            + " bytes; tensors of 2 GiB or more cannot be loaded into one array");
        }
        int count = Math.toIntExact(info.numElements());
        int size = info.dtype().byteSize();
        boolean same = target == info.dtype().toDataType();
        ByteBuffer result = manager.allocateDirect(Math.multiplyExact(count, target.getNumOfBytes()));
        if (same && (size == 1 || ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN)) {
            readFully(channel, result, dataStart + info.begin());
            return result.rewind();
        }
        ByteBuffer staging = ByteBuffer.allocate(stagingBytes(size, bytes)).order(ByteOrder.LITTLE_ENDIAN);
        int perRead = staging.capacity() / size;
        for (int first = 0; first < count; first += perRead) {
            int n = Math.min(perRead, count - first);
            staging.clear().limit(n * size);
            readFully(channel, staging, dataStart + info.begin() + (long) first * size);
            staging.flip();
            if (same) {
                reorder(staging, size, result);
            } else if (target == DataType.FLOAT32) {
                fillFloats(info.dtype(), staging, result.asFloatBuffer().slice(first, n));
            } else {
                fillDoubles(info.dtype(), staging, result.asDoubleBuffer().slice(first, n));
            }
        }
        return result.rewind();
    }

    /**
     * Reads consecutive elements of a tensor as floats, converting from any stored type as {@link
     * #toFloatArray} does, with a positional read ({@link #read}).
     *
     * @param name the tensor name
     * @param element the row-major index of the first element
     * @param into receives {@code into.length} elements
     * @throws IOException if the data cannot be read or the range passes the tensor's end
     * @throws InvalidCheckpointException if the file has no such tensor
     */
    public void readFloats(String name, long element, float[] into) throws IOException, InvalidCheckpointException {
        int size = info(name).dtype().byteSize();
        readFloats(name, element, into, ByteBuffer.allocate(stagingBytes(size, (long) into.length * size)));
    }

    /**
     * Reads consecutive elements of a tensor as floats, as {@link #readFloats(String, long, float[])}
     * does, through a buffer the caller keeps: a loader reading a tensor a row at a time passes the
     * same one for every row, so reading allocates nothing.
     *
     * @param name the tensor name
     * @param element the row-major index of the first element
     * @param into receives {@code into.length} elements
     * @param staging holds the bytes of each read (any capacity of at least one element; its
     *     contents, position and byte order are overwritten)
     * @throws IOException if the data cannot be read or the range passes the tensor's end
     * @throws InvalidCheckpointException if the file has no such tensor
     * @throws IllegalArgumentException if {@code staging} cannot hold one element
     */
    public void readFloats(String name, long element, float[] into, ByteBuffer staging)
            throws IOException, InvalidCheckpointException {
        TensorInfo info = info(name);
        int size = info.dtype().byteSize();
        int perRead = staging.capacity() / size;
        if (perRead == 0) {
            throw new IllegalArgumentException(
                    "a staging buffer of " + staging.capacity() + " bytes cannot hold one " + info.dtype() + " element");
        }
        long byteOffset = Math.multiplyExact(element, size);
        checkRange(info, byteOffset, Math.multiplyExact((long) into.length, size));
        staging.order(ByteOrder.LITTLE_ENDIAN);
        for (int first = 0; first < into.length; first += perRead) {
            int count = Math.min(perRead, into.length - first);
            staging.clear().limit(count * size);
            readFully(channel, staging, dataStart + info.begin() + byteOffset + (long) first * size);
            staging.flip();
            if (info.dtype() == SafeTensorsDtype.F32) {
                staging.asFloatBuffer().get(into, first, count);
            } else {
                for (int i = 0; i < count; i++) {
                    into[first + i] = floatElement(info.dtype(), staging, i);
                }
            }
        }
    }

    /** Releases the file. Buffers already returned by {@link #rawData} stay valid. */
    @Override
    public void close() throws IOException {
        channel.close();
    }

    /**
     * Whether the manager's engine can hold {@code type} without crashing: DJL 0.35.1's PyTorch
     * engine aborts the process for BFLOAT16 and INT16.
     */
    static boolean engineHolds(NDManager manager, DataType type) {
        boolean pytorch = "PyTorch".equals(manager.getEngine().getEngineName());
        return !(pytorch && (type == DataType.BFLOAT16 || type == DataType.INT16));
    }

    /**
     * Copies whole elements from {@code source} (in {@code source}'s order) into {@code target} (in
     * {@code target}'s order), swapping bytes only when the two orders differ.
     */
    static void reorder(ByteBuffer source, int elementSize, ByteBuffer target) {
        if (elementSize == 1 || source.order() == target.order()) {
            target.put(source);
            return;
        }
        while (source.hasRemaining()) {
            switch (elementSize) {
                case 2 -> target.putShort(source.getShort());
                case 4 -> target.putInt(source.getInt());
                case 8 -> target.putLong(source.getLong());
                default -> throw new IllegalArgumentException("element size " + elementSize);
            }
        }
    }

    /** Writes every element of little-endian {@code source} into {@code target} as a float. */
    private static void fillFloats(SafeTensorsDtype dtype, ByteBuffer source, FloatBuffer target) {
        if (dtype == SafeTensorsDtype.F32) {
            target.put(source.asFloatBuffer());
            return;
        }
        int count = target.remaining();
        for (int i = 0; i < count; i++) {
            target.put(i, floatElement(dtype, source, i));
        }
    }

    /** Element {@code i} of little-endian {@code source} as a float. */
    private static float floatElement(SafeTensorsDtype dtype, ByteBuffer source, int i) {
        // a long rounds to float directly: through double it could round twice
        return dtype == SafeTensorsDtype.I64 ? (float) source.getLong(i * 8) : (float) element(dtype, source, i);
    }

    /** Writes every element of little-endian {@code source} into {@code target} as a double. */
    private static void fillDoubles(SafeTensorsDtype dtype, ByteBuffer source, DoubleBuffer target) {
        if (dtype == SafeTensorsDtype.F64) {
            target.put(source.asDoubleBuffer());
            return;
        }
        int count = target.remaining();
        for (int i = 0; i < count; i++) {
            target.put(i, element(dtype, source, i));
        }
    }

    /** Element {@code i} of little-endian {@code source}, exactly as a double (I64 beyond 2^53 rounds). */
    private static double element(SafeTensorsDtype dtype, ByteBuffer source, int i) {
        return switch (dtype) {
            case F64 -> source.getDouble(i * 8);
            case F32 -> source.getFloat(i * 4);
            case F16 -> HalfPrecision.float16ToFloat(source.getShort(i * 2));
            case BF16 -> HalfPrecision.bfloat16ToFloat(source.getShort(i * 2));
            case I64 -> (double) source.getLong(i * 8);
            case I32 -> source.getInt(i * 4);
            case I16 -> source.getShort(i * 2);
            case I8 -> source.get(i);
            case U8 -> source.get(i) & 0xFF;
            case BOOL -> source.get(i) != 0 ? 1.0 : 0.0;
        };
    }
}
