package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.AttentionScores;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.Kernels;
import io.github.djlllmzoo.blocks.ForwardingKernels;
import io.github.djlllmzoo.blocks.KeyValues;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.KvCacheDtype;
import io.github.djlllmzoo.blocks.ScaledDotProductAttention;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.Generator;
import io.github.djlllmzoo.translators.Sampler;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What a float16 KV cache ({@code --kv-cache-dtype float16}) costs in accuracy: the mean |log-probability|
 * change per token it makes, over decode steps through the model's own greedy text, is no more than
 * what a perturbation of every key and value by exactly float16's unit roundoff {@code u = 2^-11}
 * (relative, random sign) makes. Rounding to float16 changes each element by at most {@code u}
 * relative, with a random sign, so at first order its change is at most the perturbation's; a kernel
 * that read the halves wrongly (a wrong element, byte order, rounding mode or scale) is off by far
 * more. Measured on the golden checkpoints and on the trained stories260K (figures printed; the
 * table is in docs/cpu-kernels.md).
 */
class Float16KvCacheAccuracyTest {

    /** float16's unit roundoff: half the distance from 1 to the next half. */
    private static final double HALF_ROUNDOFF = Math.scalb(1.0, -11);

    /** Sampling slack of comparing two random perturbations' means over tens of tokens. */
    private static final double SLACK = 1.25;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"stories260K", "llama-gqa", "gpt2-tiny", "mistral-sliding-window", "gemma2-softcap-window",
        "qwen3-qknorm", "phi3-fused"})
    void aFloat16CacheChangesLogprobsNoMoreThanPerturbingKeysAndValuesByItsRoundoff(String name) throws Exception {
        Path dir = checkpoint(name);
        try (LocalModel model = LocalModel.load(dir)) {
            CausalLmBlock block = model.block();
            long[] story = model.generator()
                    .generateGreedy(new long[] {1}, GenerationConfig.builder().greedy().maxNewTokens(80).build())
                    .tokenIds();
            long[] ids = new long[story.length + 1];
            ids[0] = 1;
            System.arraycopy(story, 0, ids, 1, story.length);
            double[] float32 = decodeLogProbs(model, ids);
            block.setKvCacheDtype(KvCacheDtype.FLOAT16);
            double[] float16 = decodeLogProbs(model, ids);
            block.setKvCacheDtype(null);
            Kernels chosen = block.kernels();
            block.useKernels(EngineKernels.INSTANCE);
            double[] reference = decodeLogProbs(model, ids);
            block.useKernels(new PerturbedKeysAndValues(HALF_ROUNDOFF, 11));
            double[] perturbed = decodeLogProbs(model, ids);
            block.useKernels(chosen);
            double change = meanDifference(float16, float32);
            double bound = meanDifference(perturbed, reference);
            System.out.printf(Locale.ROOT, "%s: a float16 KV cache changes the mean |logprob| per token by %.3g;"
                    + " keys and values perturbed by 2^-11 by %.3g (%d tokens)%n", name, change, bound, float32.length);
            assertTrue(change <= SLACK * bound, name + ": " + change + " against " + bound);
            assertTrue(change > 0, name + ": the float16 cache rounds something");
        }
    }

    private static Path checkpoint(String name) throws IOException {
        String fixtures = System.getProperty("llmzoo.fixtures");
        if (name.equals("stories260K")) {
            Assumptions.assumeTrue(fixtures != null && Files.isDirectory(Path.of(fixtures, "stories260K")),
                    "../shared/fixtures/stories260K is absent (skipping)");
            return Path.of(fixtures, "stories260K");
        }
        return GoldenCase.load(name).dir();
    }

    private static double meanDifference(double[] a, double[] b) {
        double sum = 0;
        for (int i = 0; i < a.length; i++) {
            sum += Math.abs(a[i] - b[i]);
        }
        return sum / a.length;
    }

    /** Each token's log-probability given the ones before, by one decode step a token. */
    private static double[] decodeLogProbs(LocalModel model, long[] ids) {
        Generator generator = model.generator();
        double[] out = new double[ids.length - 1];
        try (NDManager manager = NDManager.newBaseManager();
                KvCache cache = model.block().newCache(manager, 1, ids.length)) {
            for (int t = 0; t + 1 < ids.length; t++) {
                float[] logits = generator.nextLogits(new long[] {ids[t]}, cache);
                out[t] = logits[(int) ids[t + 1]] - Sampler.logNormalizer(logits);
            }
        }
        return out;
    }

    /**
     * The reference operations, but attention reads every key and value times {@code 1 ± u} (the
     * sign drawn per element): the largest change float16 rounding can make, with its random sign.
     */
    private static final class PerturbedKeysAndValues extends ForwardingKernels {

        private final double u;
        private final Random random;

        PerturbedKeysAndValues(double u, long seed) {
            super(EngineKernels.INSTANCE);
            this.u = u;
            this.random = new Random(seed);
        }

        private NDArray perturbed(NDArray x) {
            float[] values = x.toFloatArray();
            for (int i = 0; i < values.length; i++) {
                values[i] *= (float) (random.nextBoolean() ? 1 + u : 1 - u);
            }
            return x.getManager().create(values, x.getShape());
        }

        @Override
        public NDArray attend(
                NDArray q, KeyValues kv, NDArray mask, AttentionScores scores, float dropout, boolean training) {
            return ScaledDotProductAttention.attend(
                    q, perturbed(kv.keys()), perturbed(kv.values()), mask, scores, dropout, training);
        }
    }
}
