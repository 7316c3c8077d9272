package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.DecoderModels;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Loading a float32 checkpoint compressed allocates on the Java heap a small buffer and a row per
 * weight, not the weights' bytes again: garbage in proportion to a checkpoint of gigabytes let the
 * collector grow a young generation of hundreds of MB, resident beside the model.
 */
class CompressedLoadingHeapTest {

    private static final Path LLAMA =
            Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "llama-gqa");

    @TempDir Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"int8", "bfloat16"})
    void compressingWhileReadingAllocatesFarLessJavaHeapThanTheWeightsBytes(String dtype) throws Exception {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assumeTrue(threads.isThreadAllocatedMemorySupported(), "the JVM does not count a thread's allocations");
        threads.setThreadAllocatedMemoryEnabled(true);
        WeightFormat format = WeightFormat.parse(dtype);
        long weightBytes = writeCheckpoint();
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            // A first load brings in the classes and their static state, which are not per load.
            CheckpointWeights.load(DecoderModels.create(Configs.read(dir)), dir, manager, DataType.FLOAT32, format);
            CausalLmBlock block = DecoderModels.create(Configs.read(dir));
            long before = threads.getCurrentThreadAllocatedBytes();
            CheckpointWeights.load(block, dir, manager, DataType.FLOAT32, format);
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            // Reading a row through a fresh buffer allocates every weight byte at least once; one
            // reused buffer and a row's floats per weight are a small fraction of them.
            assertTrue(
                    allocated < weightBytes / 8,
                    "loading " + weightBytes + " bytes of float32 weights as " + dtype + " allocated " + allocated
                            + " bytes of Java heap");
        }
    }

    /**
     * Writes a float32 Llama checkpoint of the golden model's kind, widened so that its weights (28
     * MB) dwarf what a load allocates whatever their size (the header, the maps of names).
     *
     * @return the checkpoint's bytes of weights
     */
    private long writeCheckpoint() throws Exception {
        JsonObject config =
                JsonParser.parseString(Files.readString(LLAMA.resolve("config.json"), StandardCharsets.UTF_8))
                        .getAsJsonObject();
        config.addProperty("hidden_size", 512);
        config.addProperty("intermediate_size", 1024);
        config.addProperty("vocab_size", 2048);
        Files.writeString(dir.resolve("config.json"), config.toString(), StandardCharsets.UTF_8);
        DecoderConfig parsed = Configs.read(dir);
        CausalLmBlock block = DecoderModels.create(parsed);
        long bytes = 0;
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            Map<String, NDArray> tensors = new LinkedHashMap<>();
            for (Map.Entry<String, Shape> e : block.declaredShapes().entrySet()) {
                tensors.put(
                        CheckpointWeights.checkpointName(parsed, e.getKey()),
                        manager.randomNormal(0, 0.02f, e.getValue(), DataType.FLOAT32));
                bytes += e.getValue().size() * Float.BYTES;
            }
            SafeTensorsWriter.write(
                    dir.resolve("model.safetensors"), tensors, Map.of("format", "pt"));
        }
        return bytes;
    }
}
