package io.github.djlllmzoo.benchmarks;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.initializer.NormalInitializer;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.DecoderModels;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import java.io.IOException;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * Models with random weights (each block's own initializer, seeded, then scaled: by default every
 * matrix by {@link #MATRIX_SCALE}), in memory or written as a Hugging Face-layout checkpoint
 * directory that any loader of the family reads: {@code config.json}, {@code model.safetensors}
 * and, optionally, tokenizer files. {@code llmzoo init-random} and {@code bench --shape} write
 * those of a {@link ModelShape}; the serving tests and {@code scripts/load-test.sh} other shapes.
 */
public final class RandomCheckpoint {

    /**
     * Factor on the initializers' matrices and embeddings. At the training init (std 0.02) every
     * prompt of a random GPT-2 continues with one and the same token, so a comparison of two
     * engines' ids could not catch a wrong one; at 5 times that, greedy outputs vary with the
     * prompt. Speed does not depend on the values.
     */
    static final float MATRIX_SCALE = 5f;

    /** Random values drawn at once for a weight made compressed (a multiple of 16). */
    private static final int DRAWN_ELEMENTS = 1 << 18;

    /** Writes {@code config.json} as the command line writes JSON: compact, nulls kept, no HTML escaping. */
    private static final Gson GSON = new GsonBuilder().serializeNulls().disableHtmlEscaping().create();

    private RandomCheckpoint() {}

    /**
     * Writes the shape's {@code config.json} into {@code dir} (atomically) and parses it back.
     *
     * @param shape the shape
     * @param dir the directory, created if missing
     * @return the parsed config
     * @throws IOException if the file cannot be written
     * @throws InvalidCheckpointException if no parser accepts it (its family is not supported)
     */
    public static DecoderConfig writeConfig(ModelShape shape, Path dir) throws IOException, InvalidCheckpointException {
        return writeConfig(shape.config(), dir);
    }

    private static DecoderConfig writeConfig(JsonObject config, Path dir)
            throws IOException, InvalidCheckpointException {
        Files.createDirectories(dir);
        Path file = dir.resolve(CheckpointFiles.CONFIG);
        Path tmp = Files.createTempFile(dir, ".config", ".tmp");
        try {
            Files.writeString(tmp, GSON.toJson(config) + "\n", StandardCharsets.UTF_8);
            if (Files.getFileStore(tmp).supportsFileAttributeView(PosixFileAttributeView.class)) {
                Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-r--r--"));
            }
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
        return Configs.read(dir);
    }

    /**
     * Creates the model block of {@code config} with random weights.
     *
     * @param config the config
     * @param manager the manager (and device) that will own the weights
     * @param dataType the element type of the weights
     * @param seed the seed of the engine's random generator
     * @return the initialized block
     */
    public static CausalLmBlock create(DecoderConfig config, NDManager manager, DataType dataType, long seed) {
        return create(config, manager, dataType, seed, WeightFormat.FLOAT32, RandomCheckpoint::scaleMatrices, DRAWN_ELEMENTS);
    }

    /**
     * Creates the model block of {@code config} with random weights, those {@link
     * CausalLmBlock#compressWeights} compresses held as {@code weights}: each is compressed as soon as
     * it is made, so the float32 model never exists whole. The values are those of {@link
     * #create(DecoderConfig, NDManager, DataType, long)} compressed.
     *
     * @param config the config
     * @param manager the manager (and device) that will own the weights
     * @param dataType the element type of the weights that stay arrays
     * @param seed the seed of the engine's random generator
     * @param weights the form of the compressible weights
     * @return the initialized block
     */
    public static CausalLmBlock create(
            DecoderConfig config, NDManager manager, DataType dataType, long seed, WeightFormat weights) {
        return create(config, manager, dataType, seed, weights, RandomCheckpoint::scaleMatrices, DRAWN_ELEMENTS);
    }

    /** {@link #create(DecoderConfig, NDManager, DataType, long, WeightFormat)} drawing {@code drawn} values at a time. */
    static CausalLmBlock create(
            DecoderConfig config, NDManager manager, DataType dataType, long seed, WeightFormat weights, int drawn) {
        return create(config, manager, dataType, seed, weights, RandomCheckpoint::scaleMatrices, drawn);
    }

    private static CausalLmBlock create(
            DecoderConfig config,
            NDManager manager,
            DataType dataType,
            long seed,
            WeightFormat weights,
            BiConsumer<String, NDArray> scale,
            int drawn) {
        CausalLmBlock block = DecoderModels.create(config);
        Engine.getEngine(manager.getEngine().getEngineName()).setRandomSeed((int) seed);
        Map<Parameter, ProjectionWeight> compressible =
                weights == WeightFormat.FLOAT32 ? Map.of() : block.compressibleWeights();
        Map<Parameter, WeightFormat> formats = block.weightFormats(weights);
        Map<String, Shape> shapes = block.declaredShapes();
        float[][] scratch = {new float[0]}; // the drawn rows of every weight, reused
        // One parameter at a time, in the order Block.initialize takes them (so the same values).
        for (Map.Entry<String, Parameter> e : block.namedParameters().entrySet()) {
            Parameter parameter = e.getValue();
            Shape shape = shapes.get(e.getKey());
            ProjectionWeight projection = compressible.get(parameter);
            if (projection != null && drawnByRows(parameter, projection, shape)) {
                int out = Math.toIntExact(shape.get(0));
                int in = Math.toIntExact(shape.get(1));
                projection.hold(
                        CompressedWeight.compress(
                                randomRows(parameter.getInitializer(), manager, dataType, e.getKey(), scale, drawn, out, in, scratch),
                                out,
                                in,
                                formats.get(parameter)));
                continue;
            }
            parameter.setShape(shape);
            parameter.initialize(manager, dataType);
            scale.accept(e.getKey(), parameter.getArray());
            if (projection != null) {
                projection.compress(weights);
            }
        }
        return block;
    }

    /**
     * Whether a weight's random values can be drawn a block of rows at a time and still be those of
     * the whole tensor: an (out, in) weight of a normal initializer, whose draws PyTorch makes in
     * order, transforming them in groups of 16 (so blocks of a multiple of 16 elements draw the same).
     */
    private static boolean drawnByRows(Parameter parameter, ProjectionWeight projection, Shape shape) {
        return projection.layout() == ProjectionWeight.Layout.OUT_IN
                && parameter.getInitializer() instanceof NormalInitializer
                && shape.get(1) % 16 == 0;
    }

    /**
     * The rows of a random (out, in) weight, drawn about {@code drawn} values at a time (whole rows): the float32
     * weight never exists whole, and the blocks, all of one size, reuse one allocation (glibc keeps
     * freed memory in a {@code bin/llmzoo} process, where whole weights freed between the compressed
     * buffers stayed as holes worth a gigabyte for TinyLlama's shape). Each block is copied from the
     * engine's memory into {@code scratch[0]} (grown when too small), one Java array for every weight:
     * a fresh array per block made the JVM grow its young generation to hundreds of megabytes while a
     * large model was drawn, all of it resident (docs/PERFORMANCE.md, "Random weights drawn without
     * Java garbage").
     */
    private static CompressedWeight.Rows randomRows(
            Initializer initializer,
            NDManager manager,
            DataType dataType,
            String name,
            BiConsumer<String, NDArray> scale,
            int drawn,
            int out,
            int in,
            float[][] scratch) {
        int block = Math.max(1, drawn / in);
        int[] first = {-1};
        return (row, values) -> {
            if (first[0] < 0 || row >= first[0] + block || row < first[0]) {
                first[0] = row;
                int rows = Math.min(block, out - row);
                if (scratch[0].length < rows * in) {
                    scratch[0] = new float[block * in];
                }
                try (NDArray chunk = initializer.initialize(manager, new Shape(rows, in), dataType)) {
                    scale.accept(name, chunk);
                    chunk.toByteBuffer(true).order(ByteOrder.nativeOrder()).asFloatBuffer().get(scratch[0], 0, rows * in);
                }
            }
            System.arraycopy(scratch[0], (row - first[0]) * in, values, 0, in);
        };
    }

    /** Multiplies a matrix or embedding (two or more dimensions) by {@link #MATRIX_SCALE}. */
    private static void scaleMatrices(String name, NDArray array) {
        if (array.getShape().dimension() >= 2) {
            array.muli(MATRIX_SCALE);
        }
    }

    /**
     * Writes a random-weight checkpoint of {@code shape} into {@code dir}.
     *
     * @param shape the shape
     * @param dir the directory, created if missing; existing files of the same names are replaced
     * @param seed the seed of the engine's random generator
     * @param tokenizer a directory whose tokenizer files to copy in, or {@code null}
     * @return the config
     * @throws IOException if a file cannot be written
     * @throws InvalidCheckpointException if the family is not supported
     */
    public static DecoderConfig write(ModelShape shape, Path dir, long seed, Path tokenizer)
            throws IOException, InvalidCheckpointException {
        return write(shape.config(), shape.prefixedNames(), dir, seed, tokenizer, RandomCheckpoint::scaleMatrices);
    }

    /**
     * Writes a random-weight checkpoint of any {@code config.json} into {@code dir}.
     *
     * @param config the {@code config.json} to write
     * @param prefixedNames whether tensor names carry the family's checkpoint prefix (Llama's
     *     {@code model.}) as on the hub; GPT-2's carry none
     * @param dir the directory, created if missing; existing files of the same names are replaced
     * @param seed the seed of the engine's random generator
     * @param tokenizer a directory whose tokenizer files to copy in, or {@code null}
     * @param scale changes each initialized tensor in place, given its parameter name, before it is
     *     written
     * @return the parsed config
     * @throws IOException if a file cannot be written
     * @throws InvalidCheckpointException if no parser accepts the config
     */
    public static DecoderConfig write(
            JsonObject config,
            boolean prefixedNames,
            Path dir,
            long seed,
            Path tokenizer,
            BiConsumer<String, NDArray> scale)
            throws IOException, InvalidCheckpointException {
        DecoderConfig parsed = writeConfig(config, dir);
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            CausalLmBlock block = create(parsed, manager, DataType.FLOAT32, seed, WeightFormat.FLOAT32, scale, DRAWN_ELEMENTS);
            String prefix = prefixedNames ? parsed.checkpointPrefix() : "";
            Map<String, NDArray> tensors = new LinkedHashMap<>();
            for (Map.Entry<String, Parameter> e : block.namedParameters().entrySet()) {
                String name = e.getKey().startsWith("lm_head.") ? e.getKey() : prefix + e.getKey();
                tensors.put(name, e.getValue().getArray());
            }
            SafeTensorsWriter.write(dir.resolve(CheckpointFiles.WEIGHTS), tensors, Map.of("format", "pt"));
        }
        if (tokenizer != null) {
            copyTokenizer(tokenizer, dir);
        }
        return parsed;
    }

    private static void copyTokenizer(Path from, Path to) throws IOException {
        if (!Files.isDirectory(from)) {
            throw new IOException(from + ": not a tokenizer directory");
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(from)) {
            for (Path file : files) {
                String name = file.getFileName().toString();
                boolean checkpointFile = name.equals(CheckpointFiles.CONFIG) || name.startsWith(CheckpointFiles.WEIGHTS);
                if (Files.isRegularFile(file) && !checkpointFile) {
                    Path tmp = Files.createTempFile(to, "." + name, ".tmp");
                    try {
                        Files.copy(file, tmp, StandardCopyOption.REPLACE_EXISTING);
                        Files.move(tmp, to.resolve(name), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                    } finally {
                        Files.deleteIfExists(tmp);
                    }
                }
            }
        }
    }
}
