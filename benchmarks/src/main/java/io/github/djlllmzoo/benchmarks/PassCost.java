package io.github.djlllmzoo.benchmarks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.SlotKvCache;
import io.github.djlllmzoo.blocks.SlotPasses;
import io.github.djlllmzoo.blocks.SlotPrefill;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.locks.LockSupport;

/**
 * What the decode loop's passes cost, in process, each condition alternated with the others round
 * after round so a loaded machine slows them alike (compare within one run only):
 *
 * <ol>
 *   <li>A prompt chunk's pass: the loop's ({@link SlotPasses#prefill} of {@code (1, T)} into a slot
 *       row beside {@code rows} decoding ones) against the same chunk through a {@link KvCache}
 *       ({@code bench}'s path), and {@code S} chunks stacked in one {@code (S, T)} pass (what
 *       {@code bench --batch S} measures), and one chunk of {@code S × T} tokens: prompt tokens a
 *       second, and each pass's time split by {@code Kernels} call (products, attention, norms...)
 *       and the time between calls (the blocks' own engine calls).
 *   <li>A decode pass over the {@code rows} rows as the loop runs it, right after another decode
 *       pass, right after one layer of a chunk's prefill (what a step under {@code --prefill-step
 *       decode} does), right after a chunk's last layer (its pass's arrays just handed to the
 *       workers to free), and after a layer and a pause (the workers parked, the caches cold): its
 *       time and split, to find why the decode pass after a prefill layer is slower.
 * </ol>
 *
 * <p>Usage: {@code LLMZOO_LATENCY_MAIN=io.github.djlllmzoo.benchmarks.PassCost scripts/join-latency.sh --model DIR [--weights int8] [--rows 8] [--chunk 64]
 * [--stack 4] [--rounds 30] [--pause-ms 2]}.
 */
public final class PassCost {

    private PassCost() {}

    /**
     * Runs it from the command line and prints the report.
     *
     * @param args see the class comment
     * @throws Exception if the model cannot be loaded or a pass fails
     */
    public static void main(String[] args) throws Exception {
        BenchmarkArgs options = BenchmarkArgs.command("PassCost")
                .localModel("int8")
                .option("--rows", "N", "8")
                .option("--chunk", "T", "64")
                .option("--stack", "S", "4")
                .option("--rounds", "R", "30")
                .option("--pause-ms", "MS", "2")
                .parseOrExit(args);
        Path dir = options.modelDir();
        WeightFormat weights = options.weights();
        int rows = options.integer("--rows");
        int chunk = options.integer("--chunk");
        int stack = options.integer("--stack");
        int rounds = options.integer("--rounds");
        int pauseMs = options.integer("--pause-ms");
        try (LocalModel local = LocalModel.load(dir, weights);
                NDManager manager = local.model().getNDManager().newSubManager()) {
            CausalLmBlock model = local.block();
            KernelCallProfile.Timed timed = new KernelCallProfile.Timed(model.kernels());
            model.useKernels(timed);
            System.out.printf(Locale.ROOT, "%s (%s): %d decode rows, chunks of %d, %d stacked, %d rounds; load %s%n",
                    dir, weights, rows, chunk, stack, rounds, loadAverage());
            new Run(model, manager, timed, rows, chunk, stack, rounds, pauseMs).chunks().decodes();
        }
    }

    private static String loadAverage() {
        try {
            return java.nio.file.Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    /** One measurement's passes and what they cost. */
    private static final class Run {
        final CausalLmBlock model;
        final NDManager manager;
        final KernelCallProfile.Timed timed;
        final SlotPasses passes;
        final int rows;
        final int chunk;
        final int stack;
        final int rounds;
        final int pauseMs;
        final int vocab;
        final Random random = new Random(1);
        final Map<String, List<Long>> times = new LinkedHashMap<>();

        Run(CausalLmBlock model, NDManager manager, KernelCallProfile.Timed timed, int rows, int chunk, int stack,
                int rounds, int pauseMs) {
            this.model = model;
            this.manager = manager;
            this.timed = timed;
            this.passes = new SlotPasses(model);
            this.rows = rows;
            this.chunk = chunk;
            this.stack = stack;
            this.rounds = rounds;
            this.pauseMs = pauseMs;
            this.vocab = model.config().vocabSize();
        }

        long[] tokens(int n) {
            long[] ids = new long[n];
            Arrays.setAll(ids, i -> 3 + random.nextInt(vocab - 3));
            return ids;
        }

        /** Times {@code pass} under {@code label} from round 1 on (round 0 warms its buffers). */
        void time(String label, int round, Runnable pass) {
            timed.tag = label + ": ";
            timed.on = round > 0;
            timed.start();
            long start = System.nanoTime();
            pass.run();
            long took = System.nanoTime() - start;
            timed.end();
            timed.on = false;
            if (round > 0) {
                times.computeIfAbsent(label, k -> new ArrayList<>()).add(took);
            }
        }

        Run chunks() {
            try (SlotKvCache cache = passes.newCache(manager)) {
                cache.reserve(rows + 1, Math.max(256, chunk * stack + 8));
                fillDecodeRows(cache);
                String slot = "slot (1, " + chunk + ")";
                String kv = "kv (1, " + chunk + ")";
                String stacked = "kv (" + stack + ", " + chunk + ")";
                String long_ = "kv (1, " + stack * chunk + ")";
                for (int round = 0; round <= rounds; round++) {
                    time(slot, round, () -> {
                        NDManager m = manager.newSubManager(); // freed as the loop frees a pass's arrays
                        passes.prefill(m.create(tokens(chunk), new Shape(1, chunk)), cache, rows)
                                .toType(DataType.FLOAT32, false).toFloatArray();
                        model.kernels().closeStep(m);
                        cache.clear(rows);
                    });
                    time(kv, round, () -> kvPass(1, chunk));
                    time(stacked, round, () -> kvPass(stack, chunk));
                    time(long_, round, () -> kvPass(1, stack * chunk));
                }
                report("prompt chunk passes", Map.of(slot, chunk, kv, chunk, stacked, stack * chunk,
                        long_, stack * chunk));
            }
            return this;
        }

        void kvPass(int batch, int t) {
            try (NDManager m = manager.newSubManager();
                    KvCache cache = model.newCache(m, batch, t)) {
                model.forward(null, m.create(tokens(batch * t), new Shape(batch, t)), null, null, cache, true, false)
                        .toType(DataType.FLOAT32, false).toFloatArray();
            }
        }

        void fillDecodeRows(SlotKvCache cache) {
            for (int r = 0; r < rows; r++) {
                try (NDManager m = manager.newSubManager()) {
                    passes.prefill(m.create(tokens(8), new Shape(1, 8)), cache, r);
                }
            }
        }

        /** Decode passes after a decode pass, after a prefill layer, and after a layer and a pause. */
        void decodes() {
            int layers = model.config().numLayers();
            String afterDecode = "decode after a decode pass";
            String afterLayer = "decode after a prefill layer";
            String afterPause = "decode after a layer and " + pauseMs + " ms";
            String afterLast = "decode after a chunk's last layer"; // its pass's arrays just handed to be freed
            int steps = rounds * 3;
            try (SlotKvCache cache = passes.newCache(manager)) {
                // a prompt row each for the two conditions with a prefill layer, so each ends its chunks
                cache.reserve(rows + 2, Math.max(chunk, 16 + 3 * (steps + 1)));
                fillDecodeRows(cache);
                NDManager[] passManagers = new NDManager[2];
                SlotPrefill[] prefills = new SlotPrefill[2];
                for (int round = 0; round <= rounds; round++) {
                    for (String condition : List.of(afterDecode, afterLayer, afterPause)) {
                        String label = condition;
                        if (!condition.equals(afterDecode)) {
                            int p = condition.equals(afterLayer) ? 0 : 1;
                            if (prefills[p] == null) {
                                passManagers[p] = manager.newSubManager();
                                prefills[p] = passes.startPrefill(
                                        passManagers[p].create(tokens(chunk), new Shape(1, chunk)), cache, rows + p);
                            }
                            prefills[p].run(1);
                            if (prefills[p].done()) {
                                prefills[p].logits().toType(DataType.FLOAT32, false).toFloatArray();
                                model.kernels().closeStep(passManagers[p]);
                                passManagers[p] = null;
                                cache.clear(rows + p);
                                prefills[p] = null;
                                label = p == 0 ? afterLast : condition;
                            }
                            if (condition.equals(afterPause)) {
                                LockSupport.parkNanos(pauseMs * 1_000_000L);
                            }
                        } else {
                            decode(cache, "(untimed) " + label, 0); // the pass before: a decode pass
                        }
                        decode(cache, label, round);
                    }
                }
                for (NDManager passManager : passManagers) {
                    if (passManager != null) {
                        passManager.close();
                    }
                }
                report("decode passes of " + rows + " rows (" + layers + " layers a chunk)",
                        Map.of(afterDecode, rows, afterLayer, rows, afterLast, rows, afterPause, rows));
            }
        }

        void decode(SlotKvCache cache, String label, int round) {
            NDManager step = manager.newSubManager();
            long[] next = tokens(rows);
            time(label, round, () -> passes.decode(step.create(next, new Shape(rows, 1)), cache)
                    .toType(DataType.FLOAT32, false).toFloatArray());
            model.kernels().closeStep(step);
        }

        /** Each condition's median time and tokens a second, then its passes' split by call. */
        void report(String title, Map<String, Integer> tokensOf) {
            System.out.println("== " + title);
            for (Map.Entry<String, List<Long>> e : times.entrySet()) {
                Integer tokens = tokensOf.get(e.getKey());
                if (tokens == null) {
                    continue;
                }
                long[] sorted = e.getValue().stream().mapToLong(Long::longValue).sorted().toArray();
                long median = sorted[sorted.length / 2];
                System.out.printf(Locale.ROOT, "%s: median %.2f ms (p10 %.2f, p90 %.2f; %d passes), %.0f tokens/s%n",
                        e.getKey(), median / 1e6, sorted[sorted.length / 10] / 1e6,
                        sorted[sorted.length * 9 / 10] / 1e6, sorted.length, tokens * 1e9 / median);
            }
            for (String label : tokensOf.keySet()) {
                List<Long> passTimes = times.get(label);
                if (passTimes == null) {
                    continue;
                }
                long total = passTimes.stream().mapToLong(Long::longValue).sum();
                KernelCallProfile.print(label + " | call", "all calls", tagged(timed.calls, label), passTimes.size(),
                        total);
                KernelCallProfile.print(label + " | gap", "all gaps", tagged(timed.gaps, label), passTimes.size(),
                        total);
            }
            times.keySet().removeAll(tokensOf.keySet());
        }

        static Map<String, long[]> tagged(Map<String, long[]> all, String label) {
            Map<String, long[]> out = new TreeMap<>();
            all.forEach((k, v) -> {
                if (k.startsWith(label + ": ")) {
                    out.put(k.substring(label.length() + 2), v);
                }
            });
            return out;
        }
    }
}
