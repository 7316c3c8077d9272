package io.github.djlllmzoo.benchmarks;

import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.translators.ContinuousBatch;
import io.github.djlllmzoo.translators.ContinuousBatchBuilder;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationListener;
import io.github.djlllmzoo.translators.SequenceState;
import io.github.djlllmzoo.translators.StepCounters;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * What a long prompt joining a continuous batch costs the streams already running: {@code streams}
 * sequences decode (greedy, no EOS) in a {@link ContinuousBatch}; once each has {@code warmup} tokens,
 * a prompt of {@code prompt} random tokens joins and is prefilled {@code chunk} tokens a step between
 * their decode steps. Prints the running streams' time between tokens (median and p99) over the whole
 * run and while the prompt joined (from its join to its first token), and p99 over the median (the
 * issue's target: at most 3 while a 1,000-token prompt joins).
 */
public final class JoinLatency {

    /** The {@code --step-tokens} that runs a whole chunk a step (the default). */
    private static final int WHOLE_CHUNK = -1;

    private JoinLatency() {}

    /** Records when each token of a sequence came. */
    private static final class Times implements GenerationListener {
        final List<Long> nanos = new ArrayList<>();

        @Override
        public void onText(int sequence, String piece) {}

        @Override
        public void onToken(int sequence, long tokenId) {
            nanos.add(System.nanoTime());
        }
    }

    /**
     * Runs it from the command line and prints the report.
     *
     * @param args {@code --model DIR [--weights float32|int8] [--streams N] [--prompt T] [--chunk
     *     C[,C...]] [--step-tokens B|decode[,...]] [--pass-chunks P[,...]] [--tokens K] [--warmup W] [--repeat R]}: every chunk
     *     size and step budget (default: the chunk; {@code decode}: as long as a decode pass) in turn, {@code R} times over, in one process
     *     (variants compared back to back)
     * @throws Exception if the model cannot be loaded or the run fails
     */
    public static void main(String[] args) throws Exception {
        BenchmarkArgs options = BenchmarkArgs.command("JoinLatency")
                .localModel("float32")
                .option("--streams", "N", "4")
                .option("--prompt", "T", "1000")
                .option("--chunk", "C[,C...]", "64")
                .option("--step-tokens", "B|decode[,...]", null) // none: each chunk's own size
                .option("--pass-chunks", "P[,...]", String.valueOf(ContinuousBatchBuilder.PREFILL_PASS_CHUNKS))
                .option("--tokens", "K", "200")
                .option("--warmup", "W", "20")
                .option("--repeat", "R", "1")
                .parseOrExit(args);
        Path dir = options.modelDir();
        WeightFormat weights = options.weights();
        int streams = options.integer("--streams");
        int promptTokens = options.integer("--prompt");
        int[] chunks = options.integers("--chunk");
        int[] stepTokens = options.has("--step-tokens")
                ? options.integers("--step-tokens", JoinLatency::stepTokens)
                : new int[] {WHOLE_CHUNK};
        int[] passChunks = options.integers("--pass-chunks");
        int tokens = options.integer("--tokens");
        int warmup = options.integer("--warmup");
        int repeat = options.integer("--repeat");
        try (LocalModel model = LocalModel.load(dir, weights);
                NDManager manager = model.model().getNDManager().newSubManager()) {
            int window = model.config().maxPositions();
            if (promptTokens + 1 > window || 8 + tokens > window) {
                throw options.fail("the prompt (" + promptTokens + ") and each stream's 8 + " + tokens
                        + " tokens must fit the context window of " + window);
            }
            System.out.printf(Locale.ROOT, "%s (%s): %d streams of %d tokens; a %d-token prompt joins after %d%n",
                    dir, weights, streams, tokens, promptTokens, warmup);
            for (int round = 0; round < repeat; round++) {
                for (int chunk : chunks) {
                    for (int step : stepTokens) {
                        for (int pass : passChunks) {
                            run(model, manager, streams, promptTokens, chunk, step == WHOLE_CHUNK ? chunk : step, pass,
                                    tokens, warmup);
                        }
                    }
                }
            }
        }
    }

    /** A step's prompt tokens: a number, or {@code decode} ({@link ContinuousBatch#PREFILL_AS_LONG_AS_DECODE}). */
    private static int stepTokens(String value) {
        return value.equals("decode") ? ContinuousBatch.PREFILL_AS_LONG_AS_DECODE : Integer.parseInt(value);
    }

    /**
     * One run: the streams decode, the prompt joins them prefilled in chunks of {@code chunk} tokens,
     * {@code stepTokens} tokens' worth of layers a step, up to {@code passChunks} chunks a pass where
     * passes split exactly.
     */
    private static void run(LocalModel model, NDManager manager, int streams, int promptTokens, int chunk,
            int stepTokens, int passChunks, int tokens, int warmup) {
        int window = model.config().maxPositions();
        int vocab = model.config().vocabSize();
        GenerationConfig config = GenerationConfig.builder().maxNewTokens(tokens).eosTokenIds(List.of()).build();
        Random random = new Random(1);
        Times[] times = new Times[streams];
        try (ContinuousBatch batch = ContinuousBatch.builder(model.block(), manager)
                .maxRows(streams + 1).tokenBudget((long) (streams + 1) * window)
                .prefillChunk(chunk).prefillStepTokens(stepTokens).prefillPassChunks(passChunks).build()) {
            GenerationConfig one = config.toBuilder().maxNewTokens(1).build();
            // a process's first pass over a chunk's width makes the kernels' buffers: not what a join costs
            batch.join(state(random, Math.min(chunk, promptTokens), vocab, one, new Times(), window));
            while (batch.sequences() > 0) {
                batch.step();
            }
            for (int s = 0; s < streams; s++) {
                times[s] = new Times();
                batch.join(state(random, 8, vocab, config, times[s], window));
            }
            while (times[streams - 1].nanos.size() < warmup) {
                batch.step();
            }
            Times joining = new Times();
            long joined = System.nanoTime();
            StepCounters before = batch.counters();
            batch.join(state(random, promptTokens, vocab, one, joining, window));
            StepCounters joinCost = batch.counters().minus(before);
            List<Step> steps = new ArrayList<>(); // those until the prompt's first token
            StepCounters whileJoining = null;
            List<Double> decodeAlone = new ArrayList<>(); // decode passes of steps without prefill work
            List<Double> decodeAfterPrefill = new ArrayList<>();
            while (batch.sequences() > 0) {
                StepCounters last = batch.counters();
                long start = System.nanoTime();
                batch.step();
                long took = System.nanoTime() - start;
                StepCounters step = batch.counters().minus(last);
                if (step.decodeTokens() == streams) {
                    (step.prefillNanos() > 0 ? decodeAfterPrefill : decodeAlone).add(step.decodeNanos() / 1e6);
                }
                if (whileJoining == null) {
                    steps.add(new Step(took, step));
                    if (!joining.nanos.isEmpty()) {
                        whileJoining = batch.counters().minus(before);
                    }
                }
            }
            long firstToken = joining.nanos.get(0);
            List<Double> all = new ArrayList<>();
            List<Double> during = new ArrayList<>();
            for (Times stream : times) {
                for (int i = 1; i < stream.nanos.size(); i++) {
                    double gap = (stream.nanos.get(i) - stream.nanos.get(i - 1)) / 1e6;
                    all.add(gap);
                    if (stream.nanos.get(i) > joined && stream.nanos.get(i - 1) < firstToken) {
                        during.add(gap);
                    }
                }
            }
            String budget = stepTokens == ContinuousBatch.PREFILL_AS_LONG_AS_DECODE
                    ? "as long as a decode pass"
                    : stepTokens + " tokens' worth";
            System.out.printf(Locale.ROOT,
                    "chunks of %d (up to %d a pass), %s a step: first token after %.1f ms (the join itself %.1f ms)%n",
                    chunk, passChunks, budget, (firstToken - joined) / 1e6, joinCost.poolNanos() / 1e6);
            report("  time between tokens, whole run", all);
            report("  time between tokens, while it joined", during);
            System.out.printf(Locale.ROOT, "  while it joined, %d steps: %s%n", whileJoining.steps(),
                    phases(whileJoining));
            report("  decode passes of all " + streams + " streams, no prefill in the step", "passes", decodeAlone);
            report("  decode passes of all " + streams + " streams, after prefill layers", "passes", decodeAfterPrefill);
            steps.sort((a, b) -> Long.compare(b.nanos, a.nanos));
            for (Step step : steps.subList(0, Math.min(3, steps.size()))) {
                System.out.printf(Locale.ROOT, "  a slowest step, %.1f ms: %s%n", step.nanos / 1e6,
                        phases(step.counters));
            }
            System.out.printf(Locale.ROOT, "  p99 while it joined / median of the run: %.2f (target <= 3)%n",
                    quantile(during, 0.99) / quantile(all, 0.5));
        }
    }

    /** One step's wall time and what its counters say it did. */
    private record Step(long nanos, StepCounters counters) {}

    private static String phases(StepCounters c) {
        return String.format(Locale.ROOT,
                "prefill %d tokens %.1f ms, decode %d tokens %.1f ms, sampling %.1f ms, pool %.1f ms,"
                        + " prefix cache %.1f ms",
                c.prefillTokens(), c.prefillNanos() / 1e6, c.decodeTokens(), c.decodeNanos() / 1e6,
                c.sampleNanos() / 1e6, c.poolNanos() / 1e6, c.prefixNanos() / 1e6);
    }

    private static SequenceState state(
            Random random, int length, int vocab, GenerationConfig config, Times times, int window) {
        long[] prompt = new long[length];
        for (int i = 0; i < length; i++) {
            prompt[i] = random.nextInt(vocab);
        }
        return SequenceState.builder(prompt, config).contextWindow(window).listener(times).build().get(0);
    }

    private static void report(String what, List<Double> gaps) {
        report(what, "gaps", gaps);
    }

    private static void report(String what, String unit, List<Double> gaps) {
        System.out.printf(Locale.ROOT, "%s: %d %s, median %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms%n",
                what, gaps.size(), unit, quantile(gaps, 0.5), quantile(gaps, 0.9), quantile(gaps, 0.99),
                quantile(gaps, 1.0));
    }

    /** The nearest-rank quantile; NaN for none. */
    static double quantile(List<Double> values, double q) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(q * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }
}
