package io.github.djlllmzoo.zoo;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import com.google.gson.JsonElement;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsDtype;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import io.github.djlllmzoo.zoo.safetensors.TensorInfo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads a Hugging Face safetensors checkpoint (one {@code model.safetensors}, or the shards named
 * by {@code model.safetensors.index.json}) into a model block, checking every tensor against the
 * shape the config implies; and saves a block's weights under the same names.
 */
public final class CheckpointWeights {

    private static final Logger logger = LoggerFactory.getLogger(CheckpointWeights.class);

    /** Buffers some checkpoints carry that are not parameters (recomputed by the blocks). */
    private static final List<String> IGNORED_SUFFIXES =
            List.of(".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq");

    private CheckpointWeights() {}

    /**
     * The weight files of a checkpoint directory.
     *
     * @param dir the checkpoint directory
     * @return {@code model.safetensors}, or the shards of the index in order of first mention
     * @throws InvalidCheckpointException if there are no safetensors weights or a shard is missing
     */
    public static List<Path> files(Path dir) throws InvalidCheckpointException {
        Path single = dir.resolve(CheckpointFiles.WEIGHTS);
        if (Files.isRegularFile(single)) {
            return List.of(single);
        }
        Path index = dir.resolve(CheckpointFiles.WEIGHTS_INDEX);
        if (Files.isRegularFile(index)) {
            ConfigJson json = ConfigJson.read(index);
            ConfigJson map = json.optObject("weight_map");
            if (map == null) {
                throw new InvalidCheckpointException(index, "weight_map", "required field is missing");
            }
            Set<Path> shards = new LinkedHashSet<>();
            for (Map.Entry<String, JsonElement> e : map.json().entrySet()) {
                JsonElement value = e.getValue();
                if (!value.isJsonPrimitive() || !value.getAsJsonPrimitive().isString()) {
                    throw new InvalidCheckpointException(
                            index, e.getKey(), "weight_map value must be a shard file name");
                }
                Path shard = dir.resolve(value.getAsString()).normalize();
                if (!shard.startsWith(dir.normalize())) {
                    throw new InvalidCheckpointException(
                            index, e.getKey(), "shard path escapes the checkpoint directory: " + value);
                }
                if (!Files.isRegularFile(shard)) {
                    throw new InvalidCheckpointException(
                            index, e.getKey(), "names shard " + value.getAsString() + ", which does not exist");
                }
                shards.add(shard);
            }
            if (shards.isEmpty()) {
                throw new InvalidCheckpointException(index, "weight_map", "names no shards");
            }
            return new ArrayList<>(shards);
        }
        String hint =
                Files.exists(dir.resolve("pytorch_model.bin"))
                        ? " (found pytorch_model.bin: only safetensors weights are supported;"
                                + " convert with transformers' save_pretrained(safe_serialization=True))"
                        : "";
        throw new InvalidCheckpointException(
                dir, null, "no " + CheckpointFiles.WEIGHTS + " or " + CheckpointFiles.WEIGHTS_INDEX + hint);
    }

    /**
     * Loads every parameter of {@code block} from the checkpoint's weight files.
     *
     * @param block a freshly created (uninitialized) block
     * @param dir the checkpoint directory
     * @param manager the manager that will own the arrays (the model's)
     * @param dataType the element type to keep the weights in (FLOAT32 on CPU)
     * @return the stored names of tensors the block has no parameter for (also logged as a warning);
     *     empty for a checkpoint that matches the config exactly
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException naming the file and tensor that disagree with the config
     */
    public static List<String> load(CausalLmBlock block, Path dir, NDManager manager, DataType dataType)
            throws IOException, InvalidCheckpointException {
        return load(block, dir, manager, dataType, WeightFormat.FLOAT32);
    }

    /**
     * Loads every parameter of {@code block}, the weights {@link CausalLmBlock#compressWeights}
     * compresses straight into {@code weights}' form: each such tensor is read from the file a row at
     * a time and compressed as it is read (a 16-bit tensor kept in its own format is copied bit for
     * bit), so no float array of it is ever made, and the file is read, not mapped, so its pages do
     * not count as the process's memory either; the rows pass through one small buffer, so reading
     * makes no garbage that grows the Java heap. The other parameters load as arrays of {@code
     * dataType}.
     *
     * @param block a freshly created (uninitialized) block
     * @param dir the checkpoint directory
     * @param manager the manager that will own the arrays (the model's)
     * @param dataType the element type of the parameters that stay arrays
     * @param weights the form of the compressible weights ({@link WeightFormat#FLOAT32}: arrays too)
     * @return the stored names of tensors the block has no parameter for (also logged as a warning)
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException naming the file and tensor that disagree with the config
     */
    public static List<String> load(
            CausalLmBlock block, Path dir, NDManager manager, DataType dataType, WeightFormat weights)
            throws IOException, InvalidCheckpointException {
        Map<String, Parameter> parameters = block.namedParameters();
        Map<String, Shape> expected = block.declaredShapes();
        Map<Parameter, ProjectionWeight> compressible =
                weights == WeightFormat.FLOAT32 ? Map.of() : block.compressibleWeights();
        Map<Parameter, WeightFormat> formats = block.weightFormats(weights);
        String prefix = block.config().checkpointPrefix();
        boolean tied = block.config().tieWordEmbeddings();
        Map<String, Path> loadedFrom = new LinkedHashMap<>();
        List<String> unexpected = new ArrayList<>();
        // Every row of every compressed tensor is read through this one buffer: a buffer per read
        // made gigabytes of garbage over a large checkpoint, which the collector let fill a young
        // generation of hundreds of MB, resident beside the model.
        ByteBuffer staging = ByteBuffer.allocate(SafeTensorsReader.STAGING_BYTES);
        for (Path file : files(dir)) {
            try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
                for (TensorInfo info : reader.tensors().values()) {
                    String stored = info.name();
                    String name = stored.startsWith(prefix) ? stored.substring(prefix.length()) : stored;
                    Parameter parameter = parameters.get(name);
                    if (parameter == null) {
                        if (!(tied && "lm_head.weight".equals(name)) && !isIgnoredBuffer(name)) {
                            unexpected.add(stored);
                        }
                        continue;
                    }
                    if (loadedFrom.containsKey(name)) {
                        throw new InvalidCheckpointException(
                                file, stored, "tensor also present in " + loadedFrom.get(name).getFileName());
                    }
                    Shape want = expected.get(name);
                    Shape have = info.toShape();
                    if (!want.equals(have)) {
                        throw new InvalidCheckpointException(
                                file,
                                stored,
                                "shape " + have + " disagrees with config.json, which implies " + want);
                    }
                    ProjectionWeight projection = compressible.get(parameter);
                    if (projection != null) {
                        projection.hold(compress(reader, info, projection.layout(), formats.get(parameter), staging));
                    } else {
                        parameter.setArray(reader.load(stored, manager, dataType));
                    }
                    loadedFrom.put(name, file);
                }
            }
        }
        List<String> missing = new ArrayList<>();
        for (String name : parameters.keySet()) {
            if (!loadedFrom.containsKey(name)) {
                missing.add(checkpointName(block.config(), name));
            }
        }
        if (!missing.isEmpty()) {
            throw new InvalidCheckpointException(
                    dir, missing.get(0), "missing tensor(s) the config requires: " + missing);
        }
        if (!unexpected.isEmpty()) {
            logger.warn("{}: ignoring {} unexpected tensor(s): {}", dir, unexpected.size(), unexpected);
        }
        return List.copyOf(unexpected);
    }

    /**
     * Compresses one stored tensor, reading it from the file: a 16-bit tensor of the asked format and
     * (out, in) layout as its bits, an (out, in) one a row at a time, an (in, out) one (GPT-2's
     * Conv1D, whose rows are the file's columns) as one float array of this tensor only; float
     * values are read through {@code staging}.
     */
    private static CompressedWeight compress(
            SafeTensorsReader reader,
            TensorInfo info,
            ProjectionWeight.Layout layout,
            WeightFormat format,
            ByteBuffer staging)
            throws IOException, InvalidCheckpointException {
        String name = info.name();
        Shape shape = info.toShape();
        int out = Math.toIntExact(layout.out(shape));
        int in = Math.toIntExact(layout.in(shape));
        boolean sameBits =
                (info.dtype() == SafeTensorsDtype.BF16 && format == WeightFormat.BFLOAT16)
                        || (info.dtype() == SafeTensorsDtype.F16 && format == WeightFormat.FLOAT16);
        if (sameBits && layout == ProjectionWeight.Layout.OUT_IN) {
            ByteBuffer codes = ByteBuffer.allocateDirect(Math.toIntExact(info.byteSize()));
            reader.read(name, 0, codes);
            if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
                for (int i = 0; i < codes.capacity(); i += 2) {
                    codes.putShort(i, Short.reverseBytes(codes.getShort(i)));
                }
            }
            return CompressedWeight.ofCodes(format, out, in, codes.order(ByteOrder.nativeOrder()));
        }
        if (layout == ProjectionWeight.Layout.IN_OUT) {
            float[] values = new float[Math.toIntExact(info.numElements())];
            reader.readFloats(name, 0, values, staging);
            return CompressedWeight.compress(ProjectionWeight.rows(layout, FloatBuffer.wrap(values), out, in), out, in, format);
        }
        try {
            return CompressedWeight.compress(
                    (row, values) -> {
                        try {
                            reader.readFloats(name, (long) row * in, values, staging);
                        } catch (IOException | InvalidCheckpointException e) {
                            throw new ReadFailure(e);
                        }
                    },
                    out,
                    in,
                    format);
        } catch (ReadFailure e) {
            if (e.getCause() instanceof IOException) {
                throw (IOException) e.getCause();
            }
            throw (InvalidCheckpointException) e.getCause();
        }
    }

    /** Carries a checked failure of reading a row out of {@link CompressedWeight.Rows}. */
    private static final class ReadFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ReadFailure(Exception cause) {
            super(cause);
        }
    }

    /**
     * The name a parameter has in a Hugging Face causal-LM checkpoint: the config's prefix (e.g.
     * "transformer.") before the decoder's names, none before {@code lm_head}.
     *
     * @param config the model config
     * @param name the parameter's dotted name in the block
     * @return the tensor name
     */
    public static String checkpointName(DecoderConfig config, String name) {
        return name.startsWith("lm_head.") ? name : config.checkpointPrefix() + name;
    }

    /**
     * Writes every parameter of {@code block} to {@code dir/model.safetensors} (atomically) under
     * its checkpoint name, in the parameters' data type, with the {@code "format": "pt"} metadata
     * Hugging Face writes. A tied LM head is not stored, as Hugging Face does.
     *
     * @param block the model
     * @param dir the checkpoint directory
     * @throws IOException if the file cannot be written
     */
    public static void save(CausalLmBlock block, Path dir) throws IOException {
        Map<String, NDArray> tensors = new LinkedHashMap<>();
        for (Map.Entry<String, Parameter> e : block.namedParameters().entrySet()) {
            tensors.put(checkpointName(block.config(), e.getKey()), e.getValue().getArray());
        }
        SafeTensorsWriter.write(dir.resolve(CheckpointFiles.WEIGHTS), tensors, Map.of("format", "pt"));
    }

    private static boolean isIgnoredBuffer(String name) {
        for (String suffix : IGNORED_SUFFIXES) {
            if (name.endsWith(suffix)) {
                return true;
            }
        }
        return false;
    }
}
