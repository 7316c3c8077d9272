package io.github.djlllmzoo.benchmarks;

import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.translators.ContinuousBatch;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.PrefixCache;
import io.github.djlllmzoo.translators.SequenceState;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * Time to first token of a request whose prompt starts with a prefix already in the {@link
 * PrefixCache}, against the same request cold: {@code runs} prompts of a shared {@code prefix} of
 * random tokens and a {@code suffix} of their own each run alone through a {@link ContinuousBatch}
 * (prefilled {@code chunk} tokens a step, as the server does), once without a prefix cache and once
 * with one that an earlier request of the same prefix filled. Prints the median and spread of both
 * and their ratio (the target: at most 0.25 with a 500-token prefix), and checks that each
 * request generates the same tokens (greedy, {@code tokens} of them) both ways.
 */
public final class PrefixCacheLatency {

    private PrefixCacheLatency() {}

    /**
     * Runs it from the command line and prints the report.
     *
     * @param args {@code --model DIR [--weights float32|int8] [--prefix P] [--suffix S] [--chunk C]
     *     [--tokens K] [--runs N]}
     * @throws Exception if the model cannot be loaded or the run fails
     */
    public static void main(String[] args) throws Exception {
        BenchmarkArgs options = BenchmarkArgs.command("PrefixCacheLatency")
                .localModel("float32")
                .option("--prefix", "P", "500")
                .option("--suffix", "S", "20")
                .option("--chunk", "C", "64")
                .option("--tokens", "K", "16")
                .option("--runs", "N", "5")
                .parseOrExit(args);
        Path dir = options.modelDir();
        WeightFormat weights = options.weights();
        int prefix = options.integer("--prefix");
        int suffix = options.integer("--suffix");
        int chunk = options.integer("--chunk");
        int tokens = options.integer("--tokens");
        int runs = options.integer("--runs");
        if (prefix < 1 || suffix < 1 || runs < 1 || tokens < 1) {
            throw options.fail("the sizes (--prefix " + prefix + ", --suffix " + suffix + ", --tokens " + tokens
                    + ", --runs " + runs + ") must be at least 1");
        }
        try (LocalModel model = LocalModel.load(dir, weights);
                NDManager manager = model.model().getNDManager().newSubManager()) {
            int window = model.config().maxPositions();
            int length = prefix + suffix;
            if (length + tokens > window) {
                throw options.fail("the prefix, suffix and tokens (" + (length + tokens)
                        + ") must fit the context window of " + window);
            }
            Random random = new Random(1);
            long[] shared = randomTokens(random, prefix, model.config().vocabSize());
            List<long[]> prompts = new ArrayList<>();
            for (int r = 0; r <= runs; r++) { // the first fills the cache (and warms the JIT)
                long[] prompt = Arrays.copyOf(shared, length);
                System.arraycopy(randomTokens(random, suffix, model.config().vocabSize()), 0, prompt, prefix, suffix);
                prompts.add(prompt);
            }
            GenerationConfig config = GenerationConfig.builder().maxNewTokens(tokens).eosTokenIds(List.of()).build();
            Result cold = run(model, manager, prompts, config, chunk, 0);
            Result warm = run(model, manager, prompts, config, chunk, length);
            int same = 0;
            for (int r = 0; r < runs; r++) {
                same += Arrays.equals(cold.outputs.get(r), warm.outputs.get(r)) ? 1 : 0;
            }
            System.out.printf(Locale.ROOT, "%s (%s): %d requests of a %d-token shared prefix and %d tokens of their"
                            + " own, prefilled %d a step, %d tokens each%n",
                    dir, weights, runs, prefix, suffix, chunk, tokens);
            report("cold", cold.firstTokenMillis);
            report("prefix cached", warm.firstTokenMillis);
            System.out.printf(Locale.ROOT, "prefix cache: %d hits, %d tokens reused%n", warm.stats.hits(),
                    warm.stats.reusedTokens());
            System.out.printf(Locale.ROOT, "time to first token, cached / cold (medians): %.3f (target <= 0.25);"
                            + " identical outputs: %d of %d%n",
                    JoinLatency.quantile(warm.firstTokenMillis, 0.5) / JoinLatency.quantile(cold.firstTokenMillis, 0.5),
                    same, runs);
            if (same != runs) {
                System.exit(1);
            }
        }
    }

    /** The timed requests' first-token times and outputs, and the prefix cache's counters. */
    private record Result(List<Double> firstTokenMillis, List<long[]> outputs, PrefixCache.Stats stats) {}

    /**
     * Runs the prompts one after another, each alone in the batch; the first is not timed.
     *
     * @param prefixTokens the prefix cache's budget (0: none)
     */
    private static Result run(LocalModel model, NDManager manager, List<long[]> prompts, GenerationConfig config,
            int chunk, long prefixTokens) {
        int window = model.config().maxPositions();
        List<Double> millis = new ArrayList<>();
        List<long[]> outputs = new ArrayList<>();
        try (ContinuousBatch batch = ContinuousBatch.builder(model.block(), manager).maxRows(1).tokenBudget(window)
                .prefillChunk(chunk).prefixCacheTokens(prefixTokens).build()) {
            for (int r = 0; r < prompts.size(); r++) {
                SequenceState state = SequenceState.builder(prompts.get(r), config).contextWindow(window).build()
                        .get(0);
                long start = System.nanoTime();
                batch.join(state);
                while (state.generatedTokens() == 0 && !state.isFinished()) {
                    batch.step();
                }
                long firstToken = System.nanoTime();
                while (batch.sequences() > 0) {
                    batch.step();
                }
                if (r > 0) {
                    millis.add((firstToken - start) / 1e6);
                    outputs.add(state.completion().tokenIds());
                }
            }
            return new Result(millis, outputs, batch.prefixCacheStats());
        }
    }

    private static long[] randomTokens(Random random, int length, int vocab) {
        long[] out = new long[length];
        for (int i = 0; i < length; i++) {
            out[i] = random.nextInt(vocab);
        }
        return out;
    }

    private static void report(String what, List<Double> millis) {
        System.out.printf(Locale.ROOT, "time to first token, %s: median %.1f ms, min %.1f ms, max %.1f ms%n",
                what, JoinLatency.quantile(millis, 0.5), JoinLatency.quantile(millis, 0.0),
                JoinLatency.quantile(millis, 1.0));
    }
}
