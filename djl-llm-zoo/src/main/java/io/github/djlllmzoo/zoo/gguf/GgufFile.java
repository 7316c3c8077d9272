package io.github.djlllmzoo.zoo.gguf;

import java.io.IOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A GGUF file (llama.cpp's format, versions 2 and 3), opened for reading: its metadata key-values
 * ({@link GgufMetadata}), its tensor infos ({@link GgufTensor}), and their data, read a window at
 * a time ({@link FileWindow}). Little-endian files only (ggml's big-endian variant is refused). Close it to
 * release the file.
 *
 * <p>Layout: magic {@code GGUF}, version (u32), tensor count and key-value count (u64); the
 * key-values (u64-length UTF-8 key, u32 value type, value); the tensor infos (name, u32 number of
 * dimensions, u64 dimensions contiguous first, u32 ggml type, u64 offset into the data section);
 * padding to {@code general.alignment} (default 32); the data section.
 *
 * <p>A split file ({@code name-00001-of-00003.gguf}, as llama.cpp's {@code gguf-split} writes it:
 * metadata {@code split.no} from 0, {@code split.count}, {@code split.tensors.count}; the model's
 * metadata in the first part only) opens from its first part, with the tensors of every part.
 */
public final class GgufFile implements AutoCloseable {

    /** "GGUF" read as a little-endian u32. */
    private static final int MAGIC = 0x46554747;

    private static final int DEFAULT_ALIGNMENT = 32;

    /** Bounds on counts, so that a corrupt header is refused rather than allocated. */
    private static final long MAX_COUNT = 1L << 24;

    private static final int MAX_DIMS = 4;

    /** The split keys of llama.cpp's {@code gguf-split}. */
    static final String SPLIT_NO = "split.no";

    static final String SPLIT_COUNT = "split.count";

    static final String SPLIT_TENSORS = "split.tensors.count";

    /** llama.cpp's split names: {@code PREFIX-%05d-of-%05d.gguf}, numbered from 1. */
    static final Pattern SPLIT_NAME = Pattern.compile("(.*)-(\\d{5})-of-(\\d{5})\\.gguf");

    private final Path path;
    private final FileChannel channel;
    private final FileWindow window;
    private final GgufMetadata metadata;
    private final Map<String, GgufTensor> tensors;

    /** The further parts of a split file, whose tensors {@link #tensors} holds too. */
    private final List<GgufFile> parts = new ArrayList<>();

    private GgufFile(
            Path path, FileChannel channel, Map<String, Object> values, List<RawTensor> infos, long infosEnd)
            throws InvalidGgufException {
        this.path = path;
        this.channel = channel;
        this.metadata = new GgufMetadata(path, values);
        this.tensors = new LinkedHashMap<>();
        long alignment = metadata.optLong("general.alignment", DEFAULT_ALIGNMENT);
        if (alignment <= 0 || Long.bitCount(alignment) != 1) {
            throw new InvalidGgufException(path, "general.alignment", "must be a power of two, not " + alignment);
        }
        long fileSize;
        try {
            fileSize = channel.size();
        } catch (IOException e) {
            throw new InvalidGgufException(path, null, "cannot read the file size: " + e.getMessage(), e);
        }
        this.window = new FileWindow(channel, fileSize);
        long dataStart = align(infosEnd, alignment);
        for (RawTensor info : infos) {
            GgufType type = GgufType.of(info.typeId);
            if (type == null) {
                throw new InvalidGgufException(
                        path,
                        info.name,
                        "tensor type " + GgufType.nameOf(info.typeId) + " is not supported (supported: F32, F16,"
                                + " BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)");
            }
            if (info.offset % alignment != 0) {
                throw new InvalidGgufException(
                        path, info.name, "data offset " + info.offset + " is not a multiple of the alignment " + alignment);
            }
            GgufTensor tensor = new GgufTensor(this, info.name, info.dims, type, dataStart + info.offset);
            if (tensor.rowLength() % type.blockElements() != 0) {
                throw new InvalidGgufException(
                        path,
                        info.name,
                        "rows of " + tensor.rowLength() + " elements are not whole " + type + " blocks of "
                                + type.blockElements());
            }
            if (tensor.offset() + tensor.bytes() > fileSize) {
                throw new InvalidGgufException(
                        path, info.name, "data runs past the end of the file (truncated download?)");
            }
            if (tensors.put(info.name, tensor) != null) {
                throw new InvalidGgufException(path, info.name, "tensor name appears twice");
            }
        }
    }

    /**
     * Opens and parses a GGUF file.
     *
     * @param path the file
     * @return the opened file; the caller closes it
     * @throws IOException if the file cannot be read
     * @throws InvalidGgufException naming the file and the key or tensor at fault
     */
    public static GgufFile open(Path path) throws IOException, InvalidGgufException {
        GgufFile file = openPart(path);
        try {
            file.openParts();
            return file;
        } catch (IOException | InvalidGgufException | RuntimeException e) {
            file.close();
            throw e;
        }
    }

    private static GgufFile openPart(Path path) throws IOException, InvalidGgufException {
        if (!Files.isRegularFile(path)) {
            throw new InvalidGgufException(path, null, "file not found");
        }
        FileChannel channel = FileChannel.open(path, StandardOpenOption.READ);
        try {
            long size = channel.size();
            ByteBuffer header =
                    channel.map(FileChannel.MapMode.READ_ONLY, 0, Math.min(size, Integer.MAX_VALUE))
                            .order(ByteOrder.LITTLE_ENDIAN);
            Parser parser = new Parser(path, header);
            Map<String, Object> values = new LinkedHashMap<>();
            List<RawTensor> infos = new ArrayList<>();
            parser.parse(values, infos);
            return new GgufFile(path, channel, values, infos, header.position());
        } catch (IOException | InvalidGgufException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    /**
     * Opens the parts after this first one of a split file and adds their tensors, checking that
     * they are the parts its name and {@code split.*} metadata call for.
     */
    private void openParts() throws IOException, InvalidGgufException {
        int count = Math.toIntExact(metadata.optLong(SPLIT_COUNT, 1));
        if (count <= 1) {
            return;
        }
        long no = metadata.optLong(SPLIT_NO, 0);
        Matcher name = SPLIT_NAME.matcher(path.getFileName().toString());
        if (!name.matches() || Integer.parseInt(name.group(3)) != count) {
            throw new InvalidGgufException(path, SPLIT_COUNT, "part " + (no + 1) + " of a file split in " + count
                    + ", but not named as llama.cpp names the parts (NAME-%05d-of-%05d.gguf)");
        }
        if (no != 0) {
            throw new InvalidGgufException(path, SPLIT_NO, "part " + (no + 1) + " of " + count
                    + " of a split file; load its first part, " + partName(name.group(1), 1, count));
        }
        for (int i = 2; i <= count; i++) {
            Path part = path.resolveSibling(partName(name.group(1), i, count));
            if (!Files.isRegularFile(part)) {
                throw new InvalidGgufException(path, SPLIT_COUNT,
                        "part " + i + " of " + count + " is missing: " + part + " (download every part)");
            }
            GgufFile file = openPart(part);
            parts.add(file);
            if (file.metadata.optLong(SPLIT_NO, -1) != i - 1 || file.metadata.optLong(SPLIT_COUNT, -1) != count) {
                throw new InvalidGgufException(part, SPLIT_NO, "is not part " + i + " of " + count + " ("
                        + SPLIT_NO + " " + file.metadata.values().get(SPLIT_NO) + ", " + SPLIT_COUNT + " "
                        + file.metadata.values().get(SPLIT_COUNT) + ")");
            }
            for (GgufTensor t : file.tensors.values()) {
                if (tensors.put(t.name(), t) != null) {
                    throw new InvalidGgufException(part, t.name(), "tensor name appears in two parts");
                }
            }
        }
        long expected = metadata.optLong(SPLIT_TENSORS, tensors.size());
        if (expected != tensors.size()) {
            throw new InvalidGgufException(path, SPLIT_TENSORS,
                    "the parts hold " + tensors.size() + " tensors where the first part says " + expected);
        }
    }

    /** The file name of part {@code no} (from 1) of {@code count}. */
    static String partName(String prefix, int no, int count) {
        return String.format(java.util.Locale.ROOT, "%s-%05d-of-%05d.gguf", prefix, no, count);
    }

    /**
     * Whether a path names a GGUF file: an existing regular file ending in {@code .gguf}.
     *
     * @param path the path
     * @return whether it is one
     */
    public static boolean isGguf(Path path) {
        Path name = path.getFileName();
        return name != null && name.toString().toLowerCase(java.util.Locale.ROOT).endsWith(".gguf")
                && Files.isRegularFile(path);
    }

    private static long align(long position, long alignment) {
        return (position + alignment - 1) / alignment * alignment;
    }

    /** @return the file */
    public Path path() {
        return path;
    }

    /** @return the metadata key-values */
    public GgufMetadata metadata() {
        return metadata;
    }

    /** @return the tensors by name, in file order */
    public Map<String, GgufTensor> tensors() {
        return Collections.unmodifiableMap(tensors);
    }

    /**
     * @param name a tensor name
     * @return the tensor
     * @throws InvalidGgufException naming the tensor when the file lacks it
     */
    public GgufTensor require(String name) throws InvalidGgufException {
        GgufTensor tensor = tensors.get(name);
        if (tensor == null) {
            throw new InvalidGgufException(path, name, "missing tensor (architecture " + metadata.architecture() + ")");
        }
        return tensor;
    }

    /** @return the window this file's tensors read their rows through */
    FileWindow window() {
        return window;
    }

    /** @return this file and the further parts of a split file, in order */
    public List<Path> files() {
        List<Path> files = new ArrayList<>(List.of(path));
        for (GgufFile part : parts) {
            files.add(part.path);
        }
        return files;
    }

    @Override
    public void close() throws IOException {
        IOException failed = null;
        for (GgufFile part : parts) {
            try {
                part.close();
            } catch (IOException e) {
                failed = e;
            }
        }
        channel.close();
        if (failed != null) {
            throw failed;
        }
    }

    /** A tensor info as stored, before its type and offset are checked. */
    private static final class RawTensor {
        final String name;
        final long[] dims;
        final int typeId;
        final long offset;

        RawTensor(String name, long[] dims, int typeId, long offset) {
            this.name = name;
            this.dims = dims;
            this.typeId = typeId;
            this.offset = offset;
        }
    }

    /** Reads the header; every out-of-bounds read becomes a "truncated" refusal naming the key. */
    private static final class Parser {
        private final Path path;
        private final ByteBuffer buffer;
        private String at = null;

        Parser(Path path, ByteBuffer buffer) {
            this.path = path;
            this.buffer = buffer;
        }

        void parse(Map<String, Object> values, List<RawTensor> infos) throws InvalidGgufException {
            try {
                int magic = buffer.getInt();
                if (magic != MAGIC) {
                    throw new InvalidGgufException(path, null, "not a GGUF file (no GGUF magic)");
                }
                int version = buffer.getInt();
                if (version != 2 && version != 3) {
                    String why = Integer.reverseBytes(version) == 2 || Integer.reverseBytes(version) == 3
                            ? "a big-endian GGUF file, which is not supported"
                            : "GGUF version " + version + " is not supported (2 and 3 are)";
                    throw new InvalidGgufException(path, null, why);
                }
                long tensorCount = count("tensor count");
                long kvCount = count("key-value count");
                for (long i = 0; i < kvCount; i++) {
                    at = "key-value " + i;
                    String key = string();
                    at = key;
                    int type = buffer.getInt();
                    if (values.put(key, value(type)) != null) {
                        throw new InvalidGgufException(path, key, "metadata key appears twice");
                    }
                }
                for (long i = 0; i < tensorCount; i++) {
                    at = "tensor info " + i;
                    String name = string();
                    at = name;
                    int nDims = buffer.getInt();
                    if (nDims < 1 || nDims > MAX_DIMS) {
                        throw new InvalidGgufException(path, name, "has " + nDims + " dimensions (1 to 4 allowed)");
                    }
                    long[] dims = new long[nDims];
                    for (int d = 0; d < nDims; d++) {
                        dims[d] = buffer.getLong();
                        if (dims[d] <= 0 || dims[d] > Integer.MAX_VALUE) {
                            throw new InvalidGgufException(path, name, "dimension " + d + " is " + dims[d]);
                        }
                    }
                    int type = buffer.getInt();
                    long offset = buffer.getLong();
                    if (offset < 0) {
                        throw new InvalidGgufException(path, name, "negative data offset " + offset);
                    }
                    infos.add(new RawTensor(name, dims, type, offset));
                }
            } catch (BufferUnderflowException | IndexOutOfBoundsException e) {
                throw new InvalidGgufException(path, at, "the header is truncated", e);
            }
        }

        private long count(String what) throws InvalidGgufException {
            long n = buffer.getLong();
            if (n < 0 || n > MAX_COUNT) {
                throw new InvalidGgufException(path, at, what + " " + n + " is out of range");
            }
            return n;
        }

        private String string() throws InvalidGgufException {
            long length = buffer.getLong();
            if (length < 0 || length > buffer.remaining()) {
                throw new InvalidGgufException(
                        path, at, "the header is truncated: a string of " + length + " bytes runs past the end of the file");
            }
            byte[] bytes = new byte[(int) length];
            buffer.get(bytes);
            try {
                return StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .decode(ByteBuffer.wrap(bytes))
                        .toString();
            } catch (CharacterCodingException e) {
                throw new InvalidGgufException(path, at, "a string is not valid UTF-8", e);
            }
        }

        private Object value(int type) throws InvalidGgufException {
            switch (type) {
                case 0:
                    return (long) (buffer.get() & 0xFF);
                case 1:
                    return (long) buffer.get();
                case 2:
                    return (long) (buffer.getShort() & 0xFFFF);
                case 3:
                    return (long) buffer.getShort();
                case 4:
                    return buffer.getInt() & 0xFFFFFFFFL;
                case 5:
                    return (long) buffer.getInt();
                case 6:
                    return (double) buffer.getFloat();
                case 7:
                    byte b = buffer.get();
                    if (b != 0 && b != 1) {
                        throw new InvalidGgufException(path, at, "a bool is " + b + ", not 0 or 1");
                    }
                    return b == 1;
                case 8:
                    return string();
                case 9:
                    int elementType = buffer.getInt();
                    if (elementType == 9) {
                        throw new InvalidGgufException(path, at, "arrays of arrays are not supported");
                    }
                    long n = count("array length");
                    List<Object> list = new ArrayList<>((int) Math.min(n, 1 << 16));
                    for (long i = 0; i < n; i++) {
                        list.add(value(elementType));
                    }
                    return Collections.unmodifiableList(list);
                case 10:
                    return buffer.getLong();
                case 11:
                    return buffer.getLong();
                case 12:
                    return buffer.getDouble();
                default:
                    throw new InvalidGgufException(path, at, "unknown metadata value type " + type);
            }
        }
    }
}
