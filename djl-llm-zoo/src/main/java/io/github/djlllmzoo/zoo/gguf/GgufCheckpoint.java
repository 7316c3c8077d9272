package io.github.djlllmzoo.zoo.gguf;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.Map;
import java.util.HexFormat;
import java.util.stream.Stream;

/**
 * A GGUF file as this project loads it: the Hugging Face files of the same model ({@code
 * config.json} from the hyperparameters, {@code tokenizer.json} and {@code tokenizer_config.json}
 * with its chat template from the tokenizer) written once into a small directory of their own, so
 * that everything that reads a checkpoint directory (translators, the server's chat template, the
 * CLI) reads them unchanged; and the weights, read from the file itself.
 */
public final class GgufCheckpoint {

    /** System property naming where the directories of GGUF files' Hugging Face files are kept. */
    public static final String CACHE_PROPERTY = "llmzoo.gguf.cache";

    /**
     * The version of the files this class derives, part of their directory's key: raise it when
     * what is derived from a GGUF file changes, so that no directory written by an older version
     * is reused.
     */
    private static final int FILES_VERSION = 1;

    private static final Gson GSON = new GsonBuilder().setPrettyPrinting().disableHtmlEscaping().create();

    private GgufCheckpoint() {}

    /**
     * The directory holding the Hugging Face files of a GGUF file's model, written on first use
     * (atomically: a temporary directory renamed into place) and reused while the file is unchanged
     * (keyed by its path, size and modification time, those of every part of a split file, and the version of what is derived), under {@code -Dllmzoo.gguf.cache} or the
     * temporary directory.
     *
     * @param gguf the opened file
     * @return the directory
     * @throws IOException if the directory cannot be written
     * @throws InvalidGgufException naming the key the project does not support
     */
    public static Path filesDirectory(GgufFile gguf) throws IOException, InvalidGgufException {
        Path root = Path.of(System.getProperty(CACHE_PROPERTY,
                Path.of(System.getProperty("java.io.tmpdir"), "llmzoo-gguf").toString()));
        Path dir = root.resolve(key(gguf));
        if (Files.isRegularFile(dir.resolve(CheckpointFiles.CONFIG))) {
            return dir;
        }
        Files.createDirectories(root);
        Path tmp = Files.createTempDirectory(root, ".tmp-");
        try {
            writeFiles(gguf, tmp);
            try {
                Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
            } catch (FileAlreadyExistsException | DirectoryNotEmptyException | AtomicMoveNotSupportedException e) {
                if (!Files.isRegularFile(dir.resolve(CheckpointFiles.CONFIG))) {
                    throw e;
                }
                // another process wrote the same files first
            }
        } finally {
            deleteRecursively(tmp);
        }
        return dir;
    }

    /**
     * Writes the Hugging Face files of a GGUF file's model ({@code config.json}, and {@code
     * tokenizer.json} with {@code tokenizer_config.json} when the file has a tokenizer).
     *
     * @param gguf the opened file
     * @param dir an existing directory
     * @throws IOException if a file cannot be written
     * @throws InvalidGgufException naming the key the project does not support
     */
    public static void writeFiles(GgufFile gguf, Path dir) throws IOException, InvalidGgufException {
        write(dir.resolve(CheckpointFiles.CONFIG), GSON.toJson(GgufConfig.of(gguf)));
        GgufTokenizer.Files tokenizer = GgufTokenizer.of(gguf.metadata());
        if (tokenizer != null) {
            write(dir.resolve(CheckpointFiles.TOKENIZER), GSON.toJson(tokenizer.tokenizer()));
            write(dir.resolve(CheckpointFiles.TOKENIZER_CONFIG), GSON.toJson(tokenizer.tokenizerConfig()));
        }
    }

    /**
     * Loads every parameter of a block built from {@link #filesDirectory}'s {@code config.json}.
     *
     * @param block the freshly created block
     * @param gguf the opened file
     * @param manager the manager that owns the arrays
     * @param dataType the element type of the parameters kept as arrays
     * @param format the form of the compressible weights
     * @throws IOException if the file cannot be read
     * @throws InvalidGgufException naming the tensor at fault
     */
    public static void loadWeights(
            CausalLmBlock block, GgufFile gguf, NDManager manager, DataType dataType, WeightFormat format)
            throws IOException, InvalidGgufException {
        GgufWeights.load(block, gguf, manager, dataType, format);
    }

    /**
     * The weight format nearest to a file's weights: that of the type holding most of its 2-D
     * tensors' elements, F32 as float32, F16 as float16, BF16 as bfloat16, and the quantized types
     * as int8 (Q8_0 and Q4_0 exactly, Q5_K and Q6_K re-quantized per group of 32) except Q4_K, as
     * q4_k (exactly; a Q4_K_M file's Q6_K tensors then as int8).
     *
     * @param gguf the opened file
     * @return the format
     */
    public static WeightFormat nativeFormat(GgufFile gguf) {
        Map<GgufType, Long> elements = new EnumMap<>(GgufType.class);
        for (GgufTensor t : gguf.tensors().values()) {
            if (t.dims().length == 2) {
                elements.merge(t.type(), t.elements(), Long::sum);
            }
        }
        GgufType most = elements.entrySet().stream()
                .max(Map.Entry.comparingByValue())
                .map(Map.Entry::getKey)
                .orElse(GgufType.F32);
        switch (most) {
            case F32:
                return WeightFormat.FLOAT32;
            case F16:
                return WeightFormat.FLOAT16;
            case BF16:
                return WeightFormat.BFLOAT16;
            case Q4_K:
                return WeightFormat.Q4_K;
            default:
                return WeightFormat.INT8;
        }
    }

    /** The identity of a file (every part of a split one: the tensors of any decide config.json). */
    private static String key(GgufFile gguf) throws IOException {
        Path absolute = gguf.path().toAbsolutePath().normalize();
        StringBuilder identity = new StringBuilder().append(FILES_VERSION);
        for (Path part : gguf.files()) {
            Path p = part.toAbsolutePath().normalize();
            identity.append('|').append(p).append('|').append(Files.size(p)).append('|')
                    .append(Files.getLastModifiedTime(p).toMillis());
        }
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(identity.toString().getBytes(StandardCharsets.UTF_8));
            String name = absolute.getFileName().toString().replaceAll("[^A-Za-z0-9._-]", "_");
            return name + "-" + HexFormat.of().formatHex(hash, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    private static void write(Path file, String text) throws IOException {
        Files.writeString(file, text, StandardCharsets.UTF_8);
    }

    private static void deleteRecursively(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) paths.sorted(Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(p);
            }
        }
    }

}
