package io.github.djlllmzoo.benchmarks;

import ai.djl.Device;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Where the host's time goes in a decode step on {@link EngineKernels} (what computes on a GPU): a
 * model shape with random weights decodes greedily at batch 1; the steps are timed, then a few run
 * under PyTorch's profiler, which splits each step's host time into the top-level engine calls
 * (by operation: count and time, a GPU kernel's launch included but not its run) and the gaps
 * between them (Java, DJL's wrapping and freeing of each result, JNI). On a GPU a decode step of a
 * small model is bound by the host, so these say what a step costs and what fewer calls would save.
 * A test-scope tool: the GPU kit ({@code ../shared/gpu/pack.sh}) carries test classes.
 *
 * <p>Usage: {@code EngineStepProfile SHAPE DEVICE DTYPE [PROMPT] [STEPS] [PROFILED] [TRACE_DIR]},
 * e.g. {@code jrun io.github.djlllmzoo.benchmarks.EngineStepProfile tinyllama-1.1b gpu float16 128 128 8
 * $OUT} on a CUDA machine ({@code ../shared/gpu/device-run.sh}); defaults 128 prompt tokens, 128
 * timed steps, 8 profiled steps.
 */
public final class EngineStepProfile {

    private EngineStepProfile() {}

    /**
     * @param args SHAPE DEVICE DTYPE [PROMPT] [STEPS] [PROFILED] [TRACE_DIR]
     * @throws Exception if the model cannot be made or the profile not written
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: EngineStepProfile SHAPE DEVICE DTYPE [PROMPT] [STEPS] [PROFILED] [TRACE_DIR]");
            System.exit(2);
        }
        ModelShape shape = ModelShape.of(args[0]);
        Device device = "gpu".equals(args[1]) ? Device.gpu() : Device.fromName(args[1]); // "gpu" alone names no index
        DataType dataType = DataType.valueOf(args[2].toUpperCase(Locale.ROOT));
        int prompt = args.length > 3 ? Integer.parseInt(args[3]) : 128;
        int steps = args.length > 4 ? Integer.parseInt(args[4]) : 128;
        int profiled = args.length > 5 ? Integer.parseInt(args[5]) : 8;
        Path traceDir = Files.createDirectories(args.length > 6 ? Paths.get(args[6]) : Files.createTempDirectory("engine-step-profile"));
        Path configDir = Files.createTempDirectory("engine-step-shape");
        DecoderConfig config = RandomCheckpoint.writeConfig(shape, configDir);
        try (NDManager manager = NDManager.newBaseManager(device, "PyTorch")) {
            CausalLmBlock model = RandomCheckpoint.create(config, manager, dataType, 42);
            model.useKernels(EngineKernels.INSTANCE);
            int warm = Math.max(16, steps); // the JIT compiler's optimizing tier needs thousands of calls of each method
            try (KvCache cache = model.newCache(manager, 1, prompt + warm + steps + profiled + 1)) {
                long[] ids = new Random(7).longs(prompt, 0, config.vocabSize()).toArray();
                long[] next = {step(model, manager, cache, ids)};
                for (int i = 0; i < warm; i++) {
                    next[0] = step(model, manager, cache, next);
                }
                long[] nanos = new long[steps];
                for (int i = 0; i < steps; i++) {
                    long start = System.nanoTime();
                    next[0] = step(model, manager, cache, next);
                    nanos[i] = System.nanoTime() - start;
                }
                long wall = System.nanoTime();
                EngineCalls calls = EngineCalls.of(traceDir.resolve("engine-step-trace.json"), () -> {
                    for (int i = 0; i < profiled; i++) {
                        next[0] = step(model, manager, cache, next);
                    }
                });
                double profiledMs = (System.nanoTime() - wall) / 1e6 / profiled;
                report(shape, device, dataType, config.numLayers(), nanos, calls, profiled, profiledMs);
            }
        }
    }

    /**
     * One forward pass of {@code ids} at the cache's end and its greedy next id (the host waits for
     * it), the step ended as the generators end theirs.
     */
    private static long step(CausalLmBlock model, NDManager manager, KvCache cache, long[] ids) {
        NDManager step = manager.newSubManager();
        try {
            long[] next = model.kernels().argMax(
                    model.forward(null, step.create(ids, new Shape(1, ids.length)), null, null, cache, true, false));
            return next[next.length - 1];
        } finally {
            model.kernels().closeStep(step);
        }
    }

    private static void report(
            ModelShape shape, Device device, DataType type, int layers, long[] nanos, EngineCalls calls, int profiled,
            double profiledMs) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        double mean = Arrays.stream(nanos).average().orElse(0) / 1e6;
        double opMicros = calls.microsByName().values().stream().mapToDouble(Double::doubleValue).sum();
        System.out.printf(Locale.ROOT, "%s on %s in %s, %d layers: decode step mean %.3f ms, median %.3f ms (%d steps, %.1f tokens/s)%n",
                shape.label(), device, type, layers, mean, sorted[sorted.length / 2] / 1e6, nanos.length, 1e3 / mean);
        System.out.printf(Locale.ROOT,
                "profiled (%d steps, %.3f ms a step under the profiler): %.1f engine calls a step (%.1f a layer), "
                        + "%.3f ms in them, %.3f ms between them (%.2f us a call in them, %.2f us a call between)%n",
                profiled, profiledMs, (double) calls.total() / profiled, (double) calls.total() / profiled / layers,
                opMicros / 1e3 / profiled, calls.gapMicros() / 1e3 / profiled, opMicros / calls.total(),
                calls.gapMicros() / calls.total());
        System.out.println("by operation: calls a step, host us a step, us a call");
        calls.microsByName().entrySet().stream()
                .sorted(Comparator.comparing(Map.Entry<String, Double>::getValue).reversed())
                .forEach(e -> {
                    int count = calls.byName().get(e.getKey());
                    System.out.printf(Locale.ROOT, "  %-28s %8.1f %10.1f %8.2f%n", e.getKey(), (double) count / profiled,
                            e.getValue() / profiled, e.getValue() / count);
                });
        int shown = Math.min(calls.total() / profiled / layers * 2 + 16, calls.sequence().size());
        System.out.println("a step's first calls (two layers' and more): " + calls.sequence().subList(0, shown));
    }
}
