package io.github.djlllmzoo.benchmarks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Parameter;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RandomCheckpointTest {

    private static final Path GOLDEN = Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden");

    /**
     * A model made compressed, its weights drawn a few rows at a time (blocks of 256 values here,
     * so every weight takes several and most end in a partial one), holds exactly the compressed
     * weights of the float32 model of the same seed, and the same other parameters.
     */
    @ParameterizedTest
    @CsvSource({"llama-gqa, int8", "qwen2-tied-bf16, bfloat16", "gpt2-tiny, int8", "gemma3-local-global, float16"})
    void aModelMadeCompressedHoldsTheCompressedWeightsOfTheFloat32ModelOfTheSameSeed(String name, String dtype)
            throws Exception {
        DecoderConfig config = Configs.read(GOLDEN.resolve(name));
        WeightFormat format = WeightFormat.parse(dtype);
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            CausalLmBlock reference = RandomCheckpoint.create(config, manager, DataType.FLOAT32, 11);
            reference.compressWeights(format);
            CausalLmBlock made = RandomCheckpoint.create(config, manager, DataType.FLOAT32, 11, format, 256);
            Map<Parameter, CompressedWeight> want = reference.compressedWeights();
            Map<Parameter, CompressedWeight> have = made.compressedWeights();
            assertFalse(have.isEmpty());
            assertEquals(want.size(), have.size());
            List<Parameter> wantOrder = new ArrayList<>(reference.namedParameters().values());
            List<Parameter> haveOrder = new ArrayList<>(made.namedParameters().values());
            for (int i = 0; i < wantOrder.size(); i++) {
                CompressedWeight a = want.get(wantOrder.get(i));
                CompressedWeight b = have.get(haveOrder.get(i));
                if (a == null) {
                    assertArrayEquals(
                            wantOrder.get(i).getArray().toFloatArray(),
                            haveOrder.get(i).getArray().toFloatArray(),
                            "parameter " + i);
                } else {
                    assertArrayEquals(a.toFloatArray(), b.toFloatArray(), "weight " + i);
                    assertTrue(a.codes().equals(b.codes()), "codes of weight " + i);
                }
            }
        }
    }

    /**
     * Drawing a compressed model's random weights leaves no float32 copy of them on the Java heap:
     * each block of drawn rows goes through one reused array, so the calling thread allocates far
     * less than the 4 bytes a weight value that a fresh array per block took (which grew the JVM's
     * young generation by hundreds of megabytes for TinyLlama's shape, all of it resident).
     */
    @Test
    void drawingACompressedModelAllocatesLessThanAFloat32CopyOfItsWeights(@TempDir Path dir) throws Exception {
        assumeTrue(ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean);
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assumeTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled());
        JsonObject json = JsonParser.parseString(
                        Files.readString(GOLDEN.resolve("llama-gqa").resolve("config.json"), StandardCharsets.UTF_8))
                .getAsJsonObject();
        json.addProperty("hidden_size", 512); // 8 heads of 64, 4 of them key/value heads
        json.addProperty("num_attention_heads", 8);
        json.addProperty("num_key_value_heads", 4);
        json.addProperty("intermediate_size", 1376);
        json.addProperty("vocab_size", 4096);
        Files.writeString(dir.resolve("config.json"), json.toString(), StandardCharsets.UTF_8);
        DecoderConfig config = Configs.read(dir);
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            long before = threads.getCurrentThreadAllocatedBytes();
            CausalLmBlock made = RandomCheckpoint.create(config, manager, DataType.FLOAT32, 11, WeightFormat.INT8);
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            long values = 0;
            for (CompressedWeight weight : made.compressedWeights().values()) {
                values += (long) weight.outFeatures() * weight.inFeatures();
            }
            long float32Copy = values * Float.BYTES;
            assertTrue(allocated < float32Copy / 2,
                    allocated + " bytes allocated drawing " + values + " compressed values (a float32 copy: "
                            + float32Copy + ")");
        }
    }
}
