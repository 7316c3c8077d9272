package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.KeyValues;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.translators.GeneratedSequence;
import io.github.djlllmzoo.translators.GenerationConfig;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The golden cases on a CUDA GPU: float32 reproduces them as on the CPU, float16 keeps weights and
 * KV cache in half precision on the GPU and stays close. Skipped where DJL's PyTorch engine sees no
 * GPU.
 */
class GpuGoldenCasesTest {

    /** Half precision rounds every activation to 11 bits; log-probabilities move by far less. */
    private static final double HALF_LOGPROB_TOLERANCE = 5e-2;

    @BeforeEach
    void requireGpu() {
        assumeTrue(Engine.getEngine("PyTorch").getGpuCount() > 0, "no GPU visible to DJL's PyTorch engine");
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt2-tiny", "llama-gqa", "llama3-rope-scaling"})
    void float32OnTheGpuReproducesTheGoldenCase(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        try (LocalModel model = LocalModel.load(golden.dir(), Device.gpu(), DataType.FLOAT32)) {
            float[] logprobs = model.generator().scoreTokens(golden.promptIds());
            for (int i = 0; i < logprobs.length; i++) {
                assertEquals(golden.promptLogprobs()[i], logprobs[i], GoldenCase.LOGPROB_TOLERANCE, name + " token " + i);
            }
            GeneratedSequence generated =
                    model.generator().generateGreedy(golden.promptIds(), GenerationConfig.builder()
                            .maxNewTokens(golden.greedyIds().length).eosTokenIds(List.of()).build());
            assertArrayEquals(golden.greedyIds(), generated.tokenIds(), name + ": greedy ids");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt2-tiny", "llama-gqa"})
    void float16KeepsWeightsAndCacheInHalfPrecisionOnTheGpu(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        try (LocalModel model = LocalModel.load(golden.dir(), Device.gpu(), DataType.FLOAT16)) {
            assertEquals(DataType.FLOAT16, model.block().dataType());
            NDManager manager = model.model().getNDManager();
            try (KvCache cache = model.block().newCache(manager, 1, 8);
                    NDManager step = manager.newSubManager()) {
                KeyValues kv = cache.update(0, step.zeros(new ai.djl.ndarray.types.Shape(1, model.config().numKvHeads(), 1,
                        model.config().headDim()), DataType.FLOAT16), step.zeros(new ai.djl.ndarray.types.Shape(1,
                        model.config().numKvHeads(), 1, model.config().headDim()), DataType.FLOAT16));
                assertEquals(DataType.FLOAT16, kv.keys().getDataType());
                assertTrue(kv.keys().getDevice().isGpu(), "the cache lives on the GPU");
            }
            float[] logprobs = model.generator().scoreTokens(golden.promptIds());
            for (int i = 0; i < logprobs.length; i++) {
                assertEquals(golden.promptLogprobs()[i], logprobs[i], HALF_LOGPROB_TOLERANCE, name + " token " + i);
            }
        }
    }
}
