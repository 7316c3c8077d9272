package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.Float16Overflow;
import io.github.djlllmzoo.blocks.KeyValues;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.translators.GeneratedSequence;
import io.github.djlllmzoo.translators.GenerationConfig;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every golden case on a CUDA GPU: float32 reproduces them as on the CPU (log-probabilities and
 * exact greedy ids); float16 keeps weights and KV cache in half precision on the GPU and stays close
 * (Gemma 2 and 3 computing in float32 unless forced, and forced staying close on these small
 * checkpoints). Skipped where DJL's PyTorch engine sees no GPU. Run on a CUDA machine by {@code
 * scripts/gpu-check.sh}.
 */
class GpuGoldenCasesTest {

    /** Half precision rounds every activation to 11 bits; log-probabilities move by far less. */
    private static final double HALF_LOGPROB_TOLERANCE = 5e-2;

    @BeforeEach
    void requireGpu() {
        assumeTrue(Engine.getEngine("PyTorch").getGpuCount() > 0, "no GPU visible to DJL's PyTorch engine");
    }

    @ParameterizedTest
    @MethodSource("io.github.djlllmzoo.zoo.GoldenCasesTest#cases")
    void float32OnTheGpuReproducesTheGoldenCase(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        try (LocalModel model = LocalModel.load(golden.dir(), Device.gpu(), DataType.FLOAT32)) {
            assertLogprobs(golden, model, GoldenCase.LOGPROB_TOLERANCE, name + " float32");
            GeneratedSequence generated =
                    model.generator().generateGreedy(golden.promptIds(), GenerationConfig.builder()
                            .maxNewTokens(golden.greedyIds().length).eosTokenIds(List.of()).build());
            assertArrayEquals(golden.greedyIds(), generated.tokenIds(), name + ": greedy ids");
        }
    }

    @ParameterizedTest
    @MethodSource("io.github.djlllmzoo.zoo.GoldenCasesTest#cases")
    void float16KeepsWeightsAndCacheInHalfPrecisionOnTheGpu(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        try (LocalModel model = LocalModel.load(golden.dir(), Device.gpu(), DataType.FLOAT16)) {
            DataType expected = Float16Overflow.exceedsFloat16(model.config()) ? DataType.FLOAT32 : DataType.FLOAT16;
            assertEquals(expected, model.block().dataType(), name + ": Gemma 2 and 3 are guarded");
            assertCacheOnTheGpu(model, expected);
            assertLogprobs(golden, model, HALF_LOGPROB_TOLERANCE, name + " float16");
        }
        try (LocalModel forced =
                LocalModel.load(golden.dir(), Device.gpu(), DataType.FLOAT16, WeightFormat.FLOAT32, Float16Overflow.ALLOW)) {
            assertEquals(DataType.FLOAT16, forced.block().dataType(), name + " forced");
            assertLogprobs(golden, forced, HALF_LOGPROB_TOLERANCE, name + " float16 forced");
        }
    }

    private static void assertCacheOnTheGpu(LocalModel model, DataType type) {
        NDManager manager = model.model().getNDManager();
        Shape heads = new Shape(1, model.config().numKvHeads(), 1, model.config().headDim());
        try (KvCache cache = model.block().newCache(manager, 1, 8);
                NDManager step = manager.newSubManager()) {
            KeyValues kv = cache.update(0, step.zeros(heads, type), step.zeros(heads, type));
            assertEquals(type, kv.keys().getDataType());
            assertTrue(kv.keys().getDevice().isGpu(), "the cache lives on the GPU");
        }
    }

    private static void assertLogprobs(GoldenCase golden, LocalModel model, double tolerance, String what)
            throws Exception {
        float[] logprobs = model.generator().scoreTokens(golden.promptIds());
        double maxError = 0;
        for (int i = 0; i < logprobs.length; i++) {
            maxError = Math.max(maxError, Math.abs(logprobs[i] - golden.promptLogprobs()[i]));
        }
        System.out.printf(Locale.ROOT, "gpu golden %s: max |logprob - golden| = %.3g%n", what, maxError);
        assertTrue(maxError <= tolerance, what + ": max |logprob - golden| = " + maxError);
    }
}
