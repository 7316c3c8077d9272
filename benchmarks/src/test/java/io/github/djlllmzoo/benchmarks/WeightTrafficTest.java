package io.github.djlllmzoo.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.Configs;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class WeightTrafficTest {

    private static final Path GOLDEN = Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden");

    /**
     * A step reads every weight once, except a lookup table, of which it reads one row per
     * sequence: a compressed table's row is its codes and scales; a table tied to the head is read
     * whole, whatever the batch.
     */
    @ParameterizedTest
    @CsvSource({"llama-gqa, int8, 1", "llama-gqa, bfloat16, 1", "qwen2-tied-bf16, int8, 0", "llama-gqa, float32, 1"})
    void eachMoreSequenceReadsOneMoreRowOfAnUntiedTokenTable(String name, String dtype, int untiedTables)
            throws Exception {
        WeightFormat format = WeightFormat.parse(dtype);
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            CausalLmBlock model =
                    RandomCheckpoint.create(Configs.read(GOLDEN.resolve(name)), manager, DataType.FLOAT32, 3, format);
            int hidden = model.config().hiddenSize();
            long row =
                    format == WeightFormat.FLOAT32
                            ? hidden * 4L
                            : hidden * (long) format.bytesPerElement()
                                    + (format == WeightFormat.INT8
                                            ? CompressedWeight.groups(hidden) * (long) CompressedWeight.SCALE_BYTES
                                            : 0);
            assertEquals(
                    untiedTables * row,
                    WeightTraffic.bytesPerStep(model, 3) - WeightTraffic.bytesPerStep(model, 2),
                    "bytes of one more sequence");
        }
    }
}
