package io.github.djlllmzoo.zoo.gguf;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads a model block's parameters from a GGUF file's tensors: each parameter from the tensor of
 * its GGUF name ({@link GgufTensorNames}), with llama.cpp's converter undone (Llama's q/k rows
 * un-interleaved, Gemma's {@code 1 + w} norms, GPT-2's Conv1D weights transposed back). A weight
 * the block can hold compressed is kept in its own bits where the format matches: Q8_0 as our int8
 * (the same block: 32 codes and a float16 scale), Q4_0 as int8 too ({@code q - 8} with the same
 * scale: exact) or as int4 (the same block), F16 and BF16 as their 16-bit codes, Q4_K as our q4_k
 * (the same super-block); any other pairing is decoded to float32 a row at a time and compressed to
 * the asked format, except that with q4_k asked the finer quantized types are held as int8 (Q5_K,
 * Q6_K, Q8_0: a Q4_K_M file's more exact tensors stay more exact) and Q4_0 as int4 (exact).
 */
final class GgufWeights {

    private static final Logger logger = LoggerFactory.getLogger(GgufWeights.class);

    private GgufWeights() {}

    /**
     * Loads every parameter of {@code block}.
     *
     * @param block a freshly created block for the file's config
     * @param gguf the file
     * @param manager the manager that owns the arrays
     * @param dataType the element type of the parameters kept as arrays
     * @param format the form of the compressible weights ({@link WeightFormat#FLOAT32}: arrays)
     * @throws IOException if the file cannot be read
     * @throws InvalidGgufException naming the tensor that is missing or disagrees with the config
     */
    static void load(CausalLmBlock block, GgufFile gguf, NDManager manager, DataType dataType, WeightFormat format)
            throws IOException, InvalidGgufException {
        DecoderConfig config = block.config();
        Map<String, Shape> expected = block.declaredShapes();
        Map<Parameter, ProjectionWeight> projections = block.compressibleWeights();
        Map<Parameter, WeightFormat> formats = block.weightFormats(format);
        Set<String> used = new HashSet<>();
        for (Map.Entry<String, Parameter> e : block.namedParameters().entrySet()) {
            String name = e.getKey();
            String ggufName = GgufTensorNames.of(config, name);
            if (ggufName == null) {
                throw new InvalidGgufException(gguf.path(), name, "has no GGUF tensor name for architecture "
                        + gguf.metadata().architecture());
            }
            GgufTensor tensor = gguf.require(ggufName);
            used.add(ggufName);
            ProjectionWeight projection = projections.get(e.getValue());
            boolean transposed = projection != null && projection.layout() == ProjectionWeight.Layout.IN_OUT;
            Shape want = expected.get(name);
            Shape have = transposed ? new Shape(tensor.shape().get(1), tensor.shape().get(0)) : tensor.shape();
            if (!want.equals(have)) {
                throw new InvalidGgufException(gguf.path(), ggufName,
                        "shape " + tensor.shape() + " disagrees with the metadata, which implies " + want
                                + (transposed ? " transposed" : ""));
            }
            int heads = GgufTensorNames.permutedHeads(config, name);
            if (projection != null && format != WeightFormat.FLOAT32) {
                // a quantized tensor is held as the file's mix has it; a float one as the format's mix says
                projection.hold(compressed(tensor, heads, tensor.type().isQuantized() ? format : formats.get(e.getValue())));
            } else {
                e.getValue().setArray(array(tensor, heads, transposed,
                        GgufTensorNames.storedPlusOne(config, name), want, manager, dataType));
            }
        }
        List<String> unused = new ArrayList<>();
        for (String name : gguf.tensors().keySet()) {
            boolean tiedCopy = name.equals("output.weight") && config.tieWordEmbeddings();
            if (!used.contains(name) && !tiedCopy && !GgufConfig.ROTARY_TENSORS.contains(name)) {
                unused.add(name);
            }
        }
        if (!unused.isEmpty()) {
            logger.warn("{}: ignoring {} tensor(s) the model has no parameter for: {}", gguf.path(), unused.size(), unused);
        }
    }

    /** The file's stored row of our row {@code row} (llama.cpp interleaved Llama's q/k rows per head). */
    private static long storedRow(GgufTensor tensor, int row, int heads) {
        return heads == 0 ? row : GgufTensorNames.storedRow(row, Math.toIntExact(tensor.rows()), heads);
    }

    private static NDArray array(
            GgufTensor tensor,
            int heads,
            boolean transposed,
            boolean plusOne,
            Shape shape,
            NDManager manager,
            DataType dataType)
            throws IOException {
        float[] values;
        if (tensor.dims().length == 1 && heads > 0) {
            // a bias of interleaved rows: one element per row
            float[] stored = tensor.toFloatArray();
            values = new float[stored.length];
            for (int i = 0; i < stored.length; i++) {
                values[i] = stored[GgufTensorNames.storedRow(i, stored.length, heads)];
            }
        } else {
            int length = tensor.rowLength();
            int rows = Math.toIntExact(tensor.rows());
            values = new float[Math.toIntExact(tensor.elements())];
            float[] row = new float[length];
            for (int r = 0; r < rows; r++) {
                tensor.readRow(storedRow(tensor, r, heads), row, 0);
                if (transposed) {
                    for (int i = 0; i < length; i++) {
                        values[i * rows + r] = row[i];
                    }
                } else {
                    System.arraycopy(row, 0, values, r * length, length);
                }
            }
        }
        if (plusOne) {
            for (int i = 0; i < values.length; i++) {
                values[i] -= 1;
            }
        }
        NDArray array = manager.create(values, shape);
        if (dataType == DataType.FLOAT32) {
            return array;
        }
        NDArray cast = array.toType(dataType, false);
        array.close();
        return cast;
    }

    /** One (out, in) weight, compressed from the file's rows (which are (out, in) for every layout). */
    static CompressedWeight compressed(GgufTensor tensor, int heads, WeightFormat format) throws IOException {
        int out = Math.toIntExact(tensor.rows());
        int in = tensor.rowLength();
        GgufType type = tensor.type();
        if (format == WeightFormat.Q4_K && type != GgufType.Q4_K && type.isQuantized()) {
            return compressed(tensor, heads, type == GgufType.Q4_0 ? WeightFormat.INT4 : WeightFormat.INT8);
        }
        if ((format == WeightFormat.INT8 && (type == GgufType.Q8_0 || type == GgufType.Q4_0))
                || (format == WeightFormat.INT4 && type == GgufType.Q4_0)) {
            return groupedCodes(tensor, heads, out, in, format);
        }
        boolean sameBits = (type == GgufType.F16 && format == WeightFormat.FLOAT16)
                || (type == GgufType.BF16 && format == WeightFormat.BFLOAT16)
                || (type == GgufType.Q4_K && format == WeightFormat.Q4_K);
        if (sameBits) { // each row's bytes as they are: 16-bit codes, or Q4_K's super-blocks
            ByteBuffer codes = ByteBuffer.allocateDirect(Math.toIntExact(CompressedWeight.codeBytes(format, out, in)))
                    .order(ByteOrder.nativeOrder());
            for (int r = 0; r < out; r++) {
                ByteBuffer row = tensor.rowBytes(storedRow(tensor, r, heads));
                codes.put(row.slice(row.position(), Math.toIntExact(type.bytes(in))));
            }
            return CompressedWeight.ofCodes(format, out, in, codes);
        }
        try {
            return CompressedWeight.compress(
                    (r, values) -> {
                        try {
                            tensor.readRow(storedRow(tensor, r, heads), values, 0);
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                    },
                    out,
                    in,
                    format);
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }

    /**
     * The file's blocks as our grouped codes, each block's float16 scale kept: Q8_0's codes as they
     * are, Q4_0's packed codes as they are (int4: the same layout) or recentred to [-8, 7] (int8).
     * Both are exactly the file's values: {@code code * scale}.
     */
    private static CompressedWeight groupedCodes(GgufTensor tensor, int heads, int out, int in, WeightFormat format)
            throws IOException {
        int blocks = in / CompressedWeight.GROUP;
        ByteBuffer codes = ByteBuffer.allocateDirect(Math.toIntExact(CompressedWeight.codeBytes(format, out, in)));
        ByteBuffer scales = ByteBuffer.allocateDirect(Math.multiplyExact(out, blocks) * CompressedWeight.SCALE_BYTES)
                .order(ByteOrder.nativeOrder());
        boolean unpack = tensor.type() == GgufType.Q4_0 && format == WeightFormat.INT8;
        int blockBytes = tensor.type().blockBytes();
        int half = CompressedWeight.GROUP / 2;
        for (int r = 0; r < out; r++) {
            ByteBuffer row = tensor.rowBytes(storedRow(tensor, r, heads));
            int at = row.position();
            for (int b = 0; b < blocks; b++, at += blockBytes) {
                scales.putShort(row.getShort(at));
                if (unpack) {
                    for (int k = 0; k < CompressedWeight.GROUP; k++) {
                        int packed = row.get(at + 2 + k % half) & 0xFF;
                        codes.put((byte) ((k < half ? packed & 0xF : packed >> 4) - 8));
                    }
                } else {
                    for (int k = 2; k < blockBytes; k++) {
                        codes.put(row.get(at + k));
                    }
                }
            }
        }
        return CompressedWeight.ofCodes(format, out, in, codes, scales);
    }
}
