package io.github.djlllmzoo.benchmarks;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.AttentionScores;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.DecoderModels;
import io.github.djlllmzoo.blocks.KeyValues;
import io.github.djlllmzoo.blocks.Kernels;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * Where a decode step's time goes outside its products: decode steps of 1 to 8 rows of a model shape
 * with random weights (at position 64, the cache truncated back after each, as {@link
 * KernelSwitchSteps} takes them), every {@link Kernels} call timed by kind and the formats of its
 * weights (so a q4_k model's Q4_K_M mix shows its int8 products and LM head apart; a {@code project}'s
 * and {@code projectAdd}'s also by input shape, so an output and a down projection show apart), and the time
 * between two calls (the blocks' own engine calls: reshapes, the embedding, positions, the cache) by
 * the kinds around it. Prints the mean and median of each; the system properties of {@code
 * CpuKernels} apply.
 *
 * <p>Usage: {@code java -Dai.djl.pytorch.num_threads=1 -cp "$(cat cli/target/llmzoo.classpath)"
 * io.github.djlllmzoo.benchmarks.KernelCallProfile SHAPE DTYPE STEPS [ROWS]}, run as {@code
 * bin/llmzoo} runs Java.
 */
public final class KernelCallProfile {

    /** The kernels the model would use, each call timed ({@link PassCost} reuses it). */
    static final class Timed implements Kernels {
        final Kernels inner;
        final Map<String, long[]> calls = new TreeMap<>(); // [sum, count, samples...] by kind
        final Map<String, long[]> gaps = new TreeMap<>();
        String last = "step start";
        long lastEnd;
        boolean on;
        /** Put before each call's kind: which condition the calls were made under. */
        String tag = "";

        Timed(Kernels inner) {
            this.inner = inner;
        }

        <T> T time(String untagged, Supplier<T> call) {
            String kind = tag + untagged;
            long start = System.nanoTime();
            if (on) {
                add(gaps, last + " -> " + kind, start - lastEnd);
            }
            T result = call.get();
            long end = System.nanoTime();
            if (on) {
                add(calls, kind, end - start);
            }
            last = kind;
            lastEnd = end;
            return result;
        }

        static void add(Map<String, long[]> m, String key, long nanos) {
            long[] c = m.computeIfAbsent(key, k -> new long[1 << 16]);
            c[0] += nanos;
            c[1]++;
            c[(int) (c[1] + 1)] = nanos;
        }

        void start() {
            last = "step start";
            lastEnd = System.nanoTime();
        }

        void end() {
            long now = System.nanoTime();
            if (on) {
                add(gaps, last + " -> step end", now - lastEnd);
            }
        }

        /** The weights' formats ({@code float32} for a weight not compressed), joined by '+'. */
        static String formats(ProjectionWeight... weights) {
            StringBuilder names = new StringBuilder();
            for (ProjectionWeight w : weights) {
                names.append(names.length() == 0 ? " " : "+");
                names.append(w.compressed() == null ? "float32" : w.compressed().format().dtypeName());
            }
            return names.toString();
        }

        @Override
        public NDArray project(NDArray x, ProjectionWeight weight, ParameterStore store, boolean training) {
            return time("project" + x.getShape() + formats(weight), () -> inner.project(x, weight, store, training));
        }

        @Override
        public NDArray[] projectPair(NDArray x, ProjectionWeight a, ProjectionWeight b, ParameterStore s, boolean t) {
            return time("projectPair" + formats(a, b), () -> inner.projectPair(x, a, b, s, t));
        }

        @Override
        public NDArray[] projectAll(NDArray x, ProjectionWeight[] w, ParameterStore s, boolean t) {
            return time("projectAll" + formats(w), () -> inner.projectAll(x, w, s, t));
        }

        @Override
        public NDArray attend(NDArray q, KeyValues kv, NDArray mask, AttentionScores scores, float d, boolean t) {
            return time("attend", () -> inner.attend(q, kv, mask, scores, d, t));
        }

        @Override
        public NDArray rmsNorm(NDArray x, NDArray w, float eps, boolean u, boolean t) {
            return time("rmsNorm", () -> inner.rmsNorm(x, w, eps, u, t));
        }

        @Override
        public NDArray layerNorm(NDArray x, NDArray w, NDArray b, float eps, boolean t) {
            return time("layerNorm", () -> inner.layerNorm(x, w, b, eps, t));
        }

        @Override
        public NDArray[] rotate(NDArray q, NDArray k, NDList cosSin, boolean t) {
            return time("rotate", () -> inner.rotate(q, k, cosSin, t));
        }

        @Override
        public NDArray activate(NDArray g, NDArray u, HiddenActivation a, boolean t) {
            return time("activate", () -> inner.activate(g, u, a, t));
        }

        @Override
        public NDArray gatedProject(NDArray x, ProjectionWeight g, ProjectionWeight u, HiddenActivation a,
                ParameterStore s, boolean t) {
            return time("gatedProject" + formats(g, u), () -> inner.gatedProject(x, g, u, a, s, t));
        }

        @Override
        public NDArray projectAdd(NDArray x, ProjectionWeight w, NDArray r, ParameterStore s, boolean t) {
            return time("projectAdd" + x.getShape() + formats(w), () -> inner.projectAdd(x, w, r, s, t));
        }

        @Override
        public NDArray[] normedProjectAll(NDArray x, NDArray w, float eps, boolean u, ProjectionWeight[] ws,
                Shape[] shapes, ParameterStore s, boolean t) {
            return time("normedProjectAll" + formats(ws), () -> inner.normedProjectAll(x, w, eps, u, ws, shapes, s, t));
        }

        @Override
        public NDArray normedGatedProject(NDArray x, NDArray w, float eps, boolean u, ProjectionWeight g,
                ProjectionWeight up, HiddenActivation a, ParameterStore s, boolean t) {
            return time("normedGatedProject" + formats(g, up), () -> inner.normedGatedProject(x, w, eps, u, g, up, a, s, t));
        }

        @Override
        public long[] argMax(NDArray logits) {
            return time("argMax", () -> inner.argMax(logits));
        }

        @Override
        public void closeStep(NDManager step) {
            inner.closeStep(step);
        }
    }

    private KernelCallProfile() {}

    /** One table: each entry's count a step, mean and median time, time a step and share of the steps. */
    static void print(String title, String sum, Map<String, long[]> entries, int steps, long total) {
        System.out.println(title + " | count a step | us each (mean) | median | us a step | % of step");
        long all = 0;
        for (Map.Entry<String, long[]> e : entries.entrySet()) {
            long[] c = e.getValue();
            all += c[0];
            System.out.printf(Locale.ROOT, "%s | %.1f | %.2f | %.2f | %.1f | %.1f%n", e.getKey(), (double) c[1] / steps,
                    c[0] / 1e3 / c[1], median(c) / 1e3, c[0] / 1e3 / steps, 100.0 * c[0] / total);
        }
        System.out.printf(Locale.ROOT, "%s | | | | %.1f | %.1f%n", sum, all / 1e3 / steps, 100.0 * all / total);
    }

    /** The median of the samples of {@code c} ({@code [sum, count, samples...]}). */
    static long median(long[] c) {
        long[] s = Arrays.copyOfRange(c, 2, (int) c[1] + 2);
        Arrays.sort(s);
        return s[s.length / 2];
    }

    /**
     * @param args shape, dtype, steps, and the rows of a step (1 to 8; 1 when left out)
     * @throws Exception if the shape's config cannot be written or parsed
     */
    public static void main(String[] args) throws Exception {
        ModelShape shape = ModelShape.of(args[0]);
        WeightFormat format = WeightFormat.valueOf(args[1].toUpperCase(Locale.ROOT));
        int steps = Integer.parseInt(args[2]);
        int rows = args.length > 3 ? Integer.parseInt(args[3]) : 1;
        Engine engine = Engine.getEngine("PyTorch");
        engine.setRandomSeed(1);
        Path dir = Files.createTempDirectory("kernel-call-profile");
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            CausalLmBlock model = KernelSwitchSteps.randomModel(shape, format, dir, manager);
            Timed kernels = new Timed(Kernels.forModel(engine, Device.cpu(), DataType.FLOAT32));
            model.useKernels(kernels);
            long[] stepNanos = new long[steps];
            try (KvCache cache = model.newCache(manager, rows, 65)) {
                try (NDManager prefill = manager.newSubManager()) {
                    long[] ids = new long[64 * rows];
                    Arrays.setAll(ids, i -> 100 + i);
                    model.forward(null, prefill.create(ids, new Shape(rows, 64)), null, null, cache, true, false);
                }
                for (int round = -50; round < steps; round++) {
                    kernels.on = round >= 0;
                    NDManager step = manager.newSubManager();
                    long start = System.nanoTime();
                    kernels.start();
                    long[] next = new long[rows];
                    Arrays.fill(next, 464);
                    NDArray input = step.create(next, new Shape(rows, 1));
                    kernels.argMax(model.forward(null, input, null, null, cache, true, false));
                    kernels.end();
                    long time = System.nanoTime() - start;
                    kernels.closeStep(step);
                    cache.truncate(64);
                    if (round >= 0) {
                        stepNanos[round] = time;
                    }
                }
            }
            long total = Arrays.stream(stepNanos).sum();
            long[] sorted = stepNanos.clone();
            Arrays.sort(sorted);
            System.out.printf(Locale.ROOT, "%s %s, %d rows: mean step %.1f us, median %.1f us (%d steps)%n",
                    shape.label(), args[1], rows, total / 1e3 / steps, sorted[steps / 2] / 1e3, steps);
            print("call kind", "all kernel calls", kernels.calls, steps, total);
            print("gap (outside Kernels)", "all gaps", kernels.gaps, steps, total);
        } finally {
            Files.deleteIfExists(dir.resolve("config.json"));
            Files.deleteIfExists(dir);
        }
    }
}
