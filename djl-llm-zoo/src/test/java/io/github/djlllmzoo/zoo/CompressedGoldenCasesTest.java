package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.NoopTranslator;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.translators.GenerationConfig;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Golden cases loaded with 16-bit projection weights keep their greedy continuation wherever the
 * format's rounding cannot reorder the top two logits. (Their weights are larger than a trained
 * model's, so issue 21's log-probability bounds are checked on a model of realistic scale instead,
 * in cpu-kernels' CompressedModelTest.)
 *
 * <p>How a step is decided: the float32 model and the compressed one each score the prompt and the
 * golden continuation in one pass (the compressed one with its weights widened exactly: the
 * prefill's widening path, {@code -Dllmzoo.cpu.off=compressedGemm}); {@code delta} is the largest change
 * of any logit at the continuation's positions. Generating greedily through the decode kernel
 * computes the same logits to float32 rounding ({@link RoundingBound#ofLogits}), so at a step whose
 * float32 top-2 margin exceeds twice their sum neither of the two can overtake the other: the id must
 * be the golden's. The comparison runs up to the first step that is not so decided (after a
 * legitimate flip the texts differ).
 *
 * <p>Each case runs twice: with the prefill's widening path and with the compressed GEMM (the
 * default), whose products are the same float32 products of the widened weight summed in another
 * order; a generation mixes the GEMM's prefill with the decode kernel's steps, so its steps are
 * decided by the larger of the two paths' deltas.
 */
class CompressedGoldenCasesTest {

    /** cpu-kernels' list of native kernels turned off, read when a model chooses its kernels. */
    private static final String OFF = "llmzoo.cpu.off";

    /** The compressed GEMM's name in that list. */
    private static final String GEMM = "compressedGemm";

    /** Logits (T, V) of every position of {@code ids} in one pass. */
    private static float[] logits(LocalModel model, long[] ids) {
        try (NDManager manager = model.model().getNDManager().newSubManager()) {
            return model.block()
                    .forward(null, manager.create(ids, new Shape(1, ids.length)), null, null, null, false, false)
                    .toFloatArray();
        }
    }

    @ParameterizedTest
    @CsvSource({
        "gpt2-tiny, BFLOAT16", "gpt2-tiny, FLOAT16", "gpt2-wide, BFLOAT16", "gpt2-wide, FLOAT16",
        "llama-gqa, BFLOAT16", "llama-gqa, FLOAT16", "llama-mqa-tied-bf16, BFLOAT16",
        "llama-mqa-tied-bf16, FLOAT16", "llama3-rope-scaling, BFLOAT16", "llama3-rope-scaling, FLOAT16"
    })
    void greedyIdsAreTheGoldensWhereTheFormatCannotReorderTheTopTwo(String name, WeightFormat format)
            throws Exception {
        String before = System.getProperty(OFF);
        try {
            for (boolean gemm : new boolean[] {false, true}) {
                System.setProperty(OFF, gemm ? "" : GEMM);
                check(name, format, gemm);
            }
        } finally {
            restore(before);
        }
    }

    /** The widened one-pass logits of the compressed model (the reference's, to float32 rounding). */
    private static float[] widenedLogits(GoldenCase golden, WeightFormat format, long[] all) throws Exception {
        String before = System.getProperty(OFF);
        System.setProperty(OFF, GEMM);
        try (LocalModel model = LocalModel.load(golden.dir(), format)) {
            return logits(model, all);
        } finally {
            restore(before);
        }
    }

    private static void restore(String before) {
        if (before == null) {
            System.clearProperty(OFF);
        } else {
            System.setProperty(OFF, before);
        }
    }

    private static void check(String name, WeightFormat format, boolean gemm) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        long[] prompt = golden.promptIds();
        long[] greedy = golden.greedyIds();
        long[] all = Arrays.copyOf(prompt, prompt.length + greedy.length);
        System.arraycopy(greedy, 0, all, prompt.length, greedy.length);
        float[] float32;
        try (LocalModel model = LocalModel.load(golden.dir())) {
            float32 = logits(model, all);
        }
        try (LocalModel model = LocalModel.load(golden.dir(), format)) {
            assertFalse(model.block().compressedWeights().isEmpty(), "loaded compressed");
            int vocab = model.block().config().vocabSize();
            float[] compressed = logits(model, all);
            float[] widened = gemm ? widenedLogits(golden, format, all) : compressed;
            double delta = 0;
            for (int i = (prompt.length - 1) * vocab; i < float32.length; i++) {
                delta = Math.max(delta,
                        Math.max(Math.abs(float32[i] - compressed[i]), Math.abs(float32[i] - widened[i])));
            }
            double threshold = 2 * (delta + RoundingBound.ofLogits(model.block().config(), all.length, compressed));
            int decided = 0;
            while (decided < greedy.length) {
                int row = (prompt.length - 1 + decided) * vocab;
                float[] sorted = Arrays.copyOfRange(float32, row, row + vocab);
                Arrays.sort(sorted);
                if (sorted[vocab - 1] - sorted[vocab - 2] <= threshold) {
                    break;
                }
                decided++;
            }
            assertTrue(decided > 0, name + ": the first step's margin is within " + threshold);
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(decided).eosTokenIds(List.of()).build();
            long[] generated = model.generator().generateGreedy(prompt, config).tokenIds();
            assertArrayEquals(Arrays.copyOf(greedy, decided), generated,
                    name + " " + format + (gemm ? " (compressed GEMM)" : "") + ": greedy ids");
        }
    }

    @Test
    void theCriteriaDtypeArgumentLoadsInt8WeightsOnTheCpu() throws Exception {
        Criteria<NDList, NDList> criteria =
                Criteria.builder()
                        .setTypes(NDList.class, NDList.class)
                        .optGroupId(LlmModelZoo.GROUP_ID)
                        .optArtifactId(LlmModelZoo.ANY_MODEL)
                        .optArgument("model", GoldenCase.root().resolve("llama-gqa").toString())
                        .optArgument("dtype", "int8")
                        .optTranslator(new NoopTranslator())
                        .build();
        try (ZooModel<NDList, NDList> model = criteria.loadModel()) {
            CausalLmBlock block = (CausalLmBlock) model.getBlock();
            assertTrue(block.compressedWeights().values().stream().allMatch(w -> w.format() == WeightFormat.INT8));
            assertFalse(block.compressedWeights().isEmpty());
        }
    }
}
