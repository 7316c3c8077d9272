package io.github.djlllmzoo.benchmarks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Parameter;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
}
