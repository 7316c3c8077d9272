package io.github.djlllmzoo.cli;

import ai.djl.Device;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import com.google.gson.JsonArray;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import io.github.djlllmzoo.benchmarks.ComputePeak;
import io.github.djlllmzoo.benchmarks.DecodeBenchmark;
import io.github.djlllmzoo.benchmarks.GpuMemory;
import io.github.djlllmzoo.benchmarks.ModelShape;
import io.github.djlllmzoo.benchmarks.ProcessMemory;
import io.github.djlllmzoo.benchmarks.RandomCheckpoint;
import io.github.djlllmzoo.benchmarks.StreamingBandwidth;
import io.github.djlllmzoo.benchmarks.WeightTraffic;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.cpu.CpuIsa;
import io.github.djlllmzoo.cpu.TorchThreads;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code llmzoo bench}: prefill and decode speed, the cost of a decode step early and late in a long
 * sequence, peak memory, and the weight bandwidth and multiply-add rate decode achieves next to the
 * machine's streaming bandwidth and the engine's peak product rate measured in the same run (a
 * roofline: one sequence is bound by reading the weights, a batch of several by the products).
 */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Measure prefill and decode speed, memory, and bandwidth use of a model.")
final class BenchCommand implements Callable<Integer> {

    private static final String INTRA_OP = TorchThreads.INTRA_OP_PROPERTY;
    private static final String INTER_OP = TorchThreads.INTER_OP_PROPERTY;
    private static final int LONG_PROMPT = 8;
    /** Passes of the streaming read after each timed run. */
    private static final int PAIRED_PASSES = 3;
    /** Timed passes of the compute-peak measurement. */
    private static final int COMPUTE_PASSES = 5;

    @Spec CommandSpec spec;

    /** The GPU's memory, sampled after the load and after each run (nothing on the CPU). */
    private GpuMemory gpuMemory;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Source source;

    static final class Source {
        @Option(names = "--model", paramLabel = "DIR", description = "Checkpoint directory in Hugging Face layout.")
        Path model;

        @Option(
                names = "--shape",
                paramLabel = "SHAPE",
                description = "Benchmark a model of this shape with random weights (nothing to download): gpt2-small, gpt2-tiny, llama-110m, tinyllama-1.1b, qwen2-0.5b or gemma3-270m.")
        String shape;
    }

    @Mixin ComputeOptions compute;

    @Option(names = "--prompt-tokens", defaultValue = "128", paramLabel = "N", description = "Prompt length (default: ${DEFAULT-VALUE}); the prompt is random token ids.")
    int promptTokens;

    @Option(names = "--prompt-ids", paramLabel = "1,2,3", description = "Use this prompt (every sequence of the batch) instead of random ids.")
    String promptIds;

    @Option(names = "--new-tokens", defaultValue = "128", paramLabel = "N", description = "Tokens to generate per sequence (default: ${DEFAULT-VALUE}).")
    int newTokens;

    @Option(names = "--batch", defaultValue = "1", paramLabel = "B", description = "Sequences decoded together (default: ${DEFAULT-VALUE}).")
    int batch;

    @Option(names = "--runs", defaultValue = "5", paramLabel = "N", description = "Timed runs; figures are their median (default: ${DEFAULT-VALUE}).")
    int runs;

    @Option(names = "--warmup", defaultValue = "1", paramLabel = "N", description = "Untimed runs first (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(
            names = "--long-positions",
            defaultValue = "950",
            paramLabel = "N",
            description = "Decode one sequence to this position to time steps early and late; 0 skips (default: ${DEFAULT-VALUE}).")
    int longPositions;

    @Option(
            names = "--long-runs",
            defaultValue = "3",
            paramLabel = "N",
            description = "Long sequences to pool the early/late timings over; memory is watched from the end of the first (default: ${DEFAULT-VALUE}).")
    int longRuns;

    @Option(
            names = "--bandwidth-mib",
            defaultValue = "1024",
            paramLabel = "MIB",
            description = "Size of the array of the streaming-read measurement; 0 skips (default: ${DEFAULT-VALUE}).")
    int bandwidthMib;

    @Option(
            names = "--compute-size",
            defaultValue = "512",
            paramLabel = "N",
            description = "Side of the square matrices of the engine's peak product rate measurement; 0 skips (default: ${DEFAULT-VALUE}).")
    int computeSize;

    @Option(names = "--intra-op-threads", paramLabel = "N", description = "PyTorch intra-op threads (default: PyTorch's choice, the core count).")
    Integer intraOpThreads;

    @Option(names = "--inter-op-threads", paramLabel = "N", description = "PyTorch inter-op threads (default: PyTorch's choice).")
    Integer interOpThreads;

    @Option(names = "--seed", defaultValue = "42", paramLabel = "N", description = "Seed of random weights and prompts (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--output", defaultValue = "text", paramLabel = "text|json", description = "Output format (default: ${DEFAULT-VALUE}).")
    String output;

    @Override
    public Integer call() throws Exception {
        OutputFormat format = OutputFormat.parse(spec, output, OutputFormat.TEXT, OutputFormat.JSON);
        validate();
        // Read by DJL's PyTorch engine when it starts, which is below.
        if (intraOpThreads != null) {
            System.setProperty(INTRA_OP, Integer.toString(intraOpThreads));
        }
        if (interOpThreads != null) {
            System.setProperty(INTER_OP, Integer.toString(interOpThreads));
        }
        Device device = compute.device();
        DataType dataType = compute.dataType();
        WeightFormat weights = compute.weightFormat();
        double loadBefore = ProcessMemory.loadAverage();
        JsonObject result = new JsonObject();
        gpuMemory = new GpuMemory(device);
        try (BenchModel model = BenchModel.open(source, compute, seed)) {
            dataType = model.dataType;
            result.addProperty("model", model.label);
            // the KV cache's element type (--kv-cache-dtype): float16 halves what a decode step reads of it
            result.addProperty("kv_cache_dtype", model.block.kvCacheDataType().toString().toLowerCase(Locale.ROOT));
            measure(model.block, model.manager, dataType, result);
        }
        result.addProperty("device", device.toString());
        result.addProperty(
                "dtype",
                weights == WeightFormat.FLOAT32 ? dataType.toString().toLowerCase(Locale.ROOT) : weights.dtypeName());
        result.addProperty("intra_op_threads", TorchThreads.intraOp());
        result.addProperty("inter_op_threads", TorchThreads.interOp());
        String vendor = MklCpuFix.cpuVendor();
        boolean mklCpuFix = MklCpuFix.loaded();
        result.addProperty("cpu_vendor", vendor);
        // The native kernels' instruction set (-Dllmzoo.cpu.isa, else the CPU's best): avx512, avx2, neon or none.
        result.addProperty("cpu_isa", CpuIsa.selected().id());
        result.addProperty("mkl_cpu_fix", mklCpuFix);
        result.addProperty("blas", MklCpuFix.describe(vendor, mklCpuFix));
        number(result, "load_average_before", loadBefore);
        number(result, "load_average_after", ProcessMemory.loadAverage());
        PrintWriter out = spec.commandLine().getOut();
        if (format == OutputFormat.JSON) {
            out.println(Json.GSON.toJson(result));
        } else {
            printText(out, result);
        }
        out.flush();
        return 0;
    }

    private void validate() {
        positive("--new-tokens", newTokens);
        positive("--batch", batch);
        positive("--runs", runs);
        positive("--long-runs", longRuns);
        positive("--prompt-tokens", promptTokens);
        if (warmup < 0 || longPositions < 0 || bandwidthMib < 0 || computeSize < 0) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--warmup, --long-positions, --bandwidth-mib and --compute-size must not be negative");
        }
    }

    private void positive(String option, int value) {
        if (value < 1) {
            throw new ParameterException(spec.commandLine(), option + " must be at least 1, not " + value);
        }
    }

    private void measure(CausalLmBlock model, NDManager manager, DataType dataType, JsonObject result) {
        DecoderConfig config = model.config();
        long[][] prompts = prompts(config);
        int promptLength = prompts[0].length;
        if (promptLength + newTokens > config.maxPositions()) {
            throw new IllegalArgumentException(
                    "prompt of " + promptLength + " plus " + newTokens
                            + " new tokens exceeds the model's context window of " + config.maxPositions());
        }
        // The peak so far is the start-up's and the load's, which the reset below forgets.
        double loadPeak = ProcessMemory.peakRssMib();
        gpuMemory.sample();
        boolean peakReset = ProcessMemory.resetPeak();
        DecodeBenchmark bench = new DecodeBenchmark(model, manager);
        for (int i = 0; i < warmup; i++) {
            bench.generate(prompts, newTokens, null);
        }

        // The long sequences time a step early and late. The first also brings the allocator to
        // its steady state (the largest attention buffers), after which memory must stay flat over
        // the timed runs and the other long sequences.
        int longLength = Math.min(longPositions, config.maxPositions());
        int shortPrompt = Math.min(LONG_PROMPT, promptLength);
        int earlyFrom = Math.max(shortPrompt, longLength / 19);
        int window = Math.max(1, longLength / 48);
        int lateTo = longLength - longLength / 19;
        boolean longMeasured = longLength > shortPrompt + 2 * window;
        long[][] longPrompts = new long[batch][];
        for (int i = 0; i < batch; i++) {
            longPrompts[i] = Arrays.copyOf(prompts[i], shortPrompt);
        }
        double[] pooledEarly = new double[0];
        double[] pooledLate = new double[0];
        double rssBefore = Double.NaN;
        long decodedTokens = 0;
        double[] prefill = new double[runs];
        double[] decode = new double[runs];
        long weightBytes = WeightTraffic.bytesPerStep(model, batch);
        double stepGflop = 2.0 * WeightTraffic.multiplyAddsPerStep(model, batch) / 1e9;
        // The machine's bandwidth drifts from minute to minute (other tenants of the host): each
        // timed run is paired with a streaming read right after it, unless the peak cannot be
        // reset around the read's array (it must not count as the model's memory).
        boolean paired = bandwidthMib > 0 && peakReset;
        double[] streams = new double[runs];
        double[] fractions = new double[runs];
        double peak = -1;
        DecodeBenchmark.Run last = null;
        for (int r = 0; r <= (longMeasured ? longRuns : 0); r++) {
            if (r == (longMeasured ? 1 : 0)) {
                rssBefore = ProcessMemory.retainedRssMib();
                for (int i = 0; i < runs; i++) {
                    last = bench.generate(prompts, newTokens, null);
                    gpuMemory.sample();
                    prefill[i] = (double) batch * promptLength / last.prefillSeconds();
                    decode[i] =
                            last.decodeSteps() == 0
                                    ? Double.NaN
                                    : (double) batch * last.decodeSteps() / last.decodeSeconds();
                    decodedTokens += (long) batch * last.decodeSteps();
                    if (paired) {
                        peak = Math.max(peak, ProcessMemory.peakRssMib());
                        streams[i] = StreamingBandwidth.measure(manager, (long) bandwidthMib << 20, PAIRED_PASSES);
                        ProcessMemory.resetPeak();
                        fractions[i] = weightGbPerS(weightBytes, decode[i], batch) / streams[i];
                    }
                }
            }
            if (longMeasured && r < longRuns) {
                double[] stepMillis = new double[longLength];
                Arrays.fill(stepMillis, Double.NaN);
                DecodeBenchmark.Run run = bench.generate(longPrompts, longLength - shortPrompt + 1, stepMillis);
                gpuMemory.sample();
                if (r > 0) {
                    decodedTokens += (long) batch * run.decodeSteps();
                }
                pooledEarly = concat(pooledEarly, Arrays.copyOfRange(stepMillis, earlyFrom, earlyFrom + window));
                pooledLate = concat(pooledLate, Arrays.copyOfRange(stepMillis, lateTo - window, lateTo));
            }
        }
        double prefillMedian = StreamingBandwidth.median(prefill);
        double decodeMedian = StreamingBandwidth.median(decode);
        double early = longMeasured ? DecodeBenchmark.windowMedian(pooledEarly, 0, pooledEarly.length) : Double.NaN;
        double late = longMeasured ? DecodeBenchmark.windowMedian(pooledLate, 0, pooledLate.length) : Double.NaN;
        double rssEnd = ProcessMemory.retainedRssMib();
        double rssAnon = ProcessMemory.anonRssMib();
        double rssFile = ProcessMemory.fileRssMib();
        double javaHeap = Runtime.getRuntime().totalMemory() / (double) (1 << 20);
        peak = Math.max(peak, ProcessMemory.peakRssMib());
        double effective = weightGbPerS(weightBytes, decodeMedian, batch);
        double stream;
        double fraction;
        String streamMethod = "DJL sum() over a " + bandwidthMib + " MiB float32 array, one slice per core at once, ";
        if (paired) {
            stream = StreamingBandwidth.median(streams);
            fraction = StreamingBandwidth.median(fractions);
            streamMethod += "median of " + PAIRED_PASSES + " passes right after each timed run";
        } else {
            stream = bandwidthMib == 0 ? Double.NaN : StreamingBandwidth.measure(manager, (long) bandwidthMib << 20, 7);
            fraction = effective / stream;
            streamMethod = bandwidthMib == 0 ? "not measured" : streamMethod + "median of 7 after the runs";
        }
        double computePeak =
                computeSize == 0
                        ? Double.NaN
                        : ComputePeak.measure(manager, dataType, computeSize, COMPUTE_PASSES);
        double effectiveGflops = stepGflop * decodeMedian / batch;
        // A step takes at least as long as reading its weights and as doing its products.
        double readSeconds = weightBytes / (stream * 1e9);
        double productSeconds = stepGflop / computePeak;
        boolean computeBound = Double.isNaN(readSeconds) || productSeconds > readSeconds; // NaN: not measured
        double boundSeconds = computeBound ? productSeconds : readSeconds;
        double roofline = batch / boundSeconds;

        number(result, "prefill_tokens_per_s", prefillMedian);
        number(result, "decode_tokens_per_s", decodeMedian);
        number(result, "decode_ms_early", early);
        number(result, "decode_ms_late", late);
        number(result, "peak_rss_mb", peak);
        number(result, "load_peak_rss_mb", loadPeak);
        number(result, "rss_anon_mb", rssAnon);
        number(result, "rss_file_mb", rssFile);
        number(result, "java_heap_mb", javaHeap);
        number(result, "peak_gpu_mb", gpuMemory.peakMib());
        number(result, "gpu_total_mb", gpuMemory.totalMib());
        result.addProperty("weight_bytes", weightBytes);
        result.addProperty("resident_weight_bytes", WeightTraffic.residentBytes(model));
        number(result, "effective_gb_per_s", effective);
        number(result, "stream_gb_per_s", stream);
        result.addProperty("stream_method", streamMethod);
        number(result, "bandwidth_fraction", fraction);
        number(result, "step_gflop", stepGflop);
        number(result, "effective_gflop_per_s", effectiveGflops);
        number(result, "compute_gflop_per_s", computePeak);
        result.addProperty(
                "compute_method",
                computeSize == 0
                        ? "not measured"
                        : "DJL matMul of " + computeSize + "x" + computeSize + " matrices, one chain per core at once, median of "
                                + COMPUTE_PASSES + " passes after the runs");
        number(result, "compute_fraction", effectiveGflops / computePeak);
        number(result, "roofline_tokens_per_s", roofline);
        result.addProperty(
                "roofline_bound", Double.isFinite(roofline) ? (computeBound ? "compute" : "bandwidth") : "not measured");
        number(result, "roofline_fraction", decodeMedian / roofline);
        number(result, "late_over_early", late / early);
        result.addProperty("early_positions", longMeasured ? earlyFrom + ".." + (earlyFrom + window - 1) : "-");
        result.addProperty("late_positions", longMeasured ? (lateTo - window) + ".." + (lateTo - 1) : "-");
        number(result, "rss_growth_mb", rssEnd - rssBefore);
        result.addProperty("rss_window_decode_tokens", decodedTokens);
        result.addProperty("peak_rss_reset_after_load", peakReset);
        result.addProperty("batch", batch);
        result.addProperty("prompt_tokens", promptLength);
        result.addProperty("new_tokens", newTokens);
        result.addProperty("runs", runs);
        result.add("prefill_tokens_per_s_runs", numbers(prefill));
        result.add("decode_tokens_per_s_runs", numbers(decode));
        if (paired) {
            result.add("stream_gb_per_s_runs", numbers(streams));
            result.add("bandwidth_fraction_runs", numbers(fractions));
        }
        JsonArray ids = new JsonArray();
        for (long id : last.firstRowIds()) {
            ids.add(id);
        }
        result.add("output_ids", ids);
    }

    private long[][] prompts(DecoderConfig config) {
        long[][] prompts = new long[batch][];
        if (promptIds != null) {
            long[] ids = TokenIds.parse("--prompt-ids", promptIds);
            for (long id : ids) {
                if (id < 0 || id >= config.vocabSize()) {
                    throw new IllegalArgumentException(
                            "--prompt-ids: token id " + id + " is outside the vocabulary of " + config.vocabSize());
                }
            }
            Arrays.fill(prompts, ids);
            return prompts;
        }
        for (int i = 0; i < batch; i++) {
            Random random = new Random(seed + i);
            prompts[i] = random.longs(promptTokens, 0, config.vocabSize()).toArray();
        }
        return prompts;
    }

    private static double[] concat(double[] a, double[] b) {
        double[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** The weight bandwidth a decode speed implies: every weight read once per step of {@code batch} tokens. */
    private static double weightGbPerS(long weightBytes, double tokensPerS, int batch) {
        return weightBytes * (tokensPerS / batch) / 1e9;
    }

    private static JsonArray numbers(double[] values) {
        JsonArray array = new JsonArray();
        for (double v : values) {
            array.add(Double.isFinite(v) ? new JsonPrimitive(v) : JsonNull.INSTANCE);
        }
        return array;
    }

    /** Adds a figure, or JSON null for one not measured (NaN), which JSON cannot spell. */
    private static void number(JsonObject result, String key, double value) {
        result.add(key, Double.isFinite(value) ? new JsonPrimitive(value) : JsonNull.INSTANCE);
    }

    private static void printText(PrintWriter out, JsonObject r) {
        int batch = r.get("batch").getAsInt();
        out.printf(Locale.ROOT,
                "model          %s on %s, %s, %s KV cache, batch %d; PyTorch threads: intra-op %d, inter-op %d%n",
                r.get("model").getAsString(), r.get("device").getAsString(), r.get("dtype").getAsString(),
                r.get("kv_cache_dtype").getAsString(), batch,
                r.get("intra_op_threads").getAsInt(), r.get("inter_op_threads").getAsInt());
        out.printf(Locale.ROOT, "cpu            %s%n", r.get("blas").getAsString());
        out.printf(Locale.ROOT, "prefill        %.1f tokens/s (%d-token prompt, median of %d runs)%n",
                num(r, "prefill_tokens_per_s"), r.get("prompt_tokens").getAsInt(), r.get("runs").getAsInt());
        out.printf(Locale.ROOT, "decode         %.1f tokens/s (%d new tokens, median of %d runs)%n",
                num(r, "decode_tokens_per_s"), r.get("new_tokens").getAsInt(), r.get("runs").getAsInt());
        if (r.get("decode_ms_early").isJsonNull()) {
            out.println("decode step    early/late not measured (--long-positions 0)");
        } else {
            out.printf(Locale.ROOT, "decode step    %.2f ms at positions %s, %.2f ms at positions %s (late/early %.2f)%n",
                    num(r, "decode_ms_early"), r.get("early_positions").getAsString(), num(r, "decode_ms_late"),
                    r.get("late_positions").getAsString(), num(r, "late_over_early"));
        }
        out.printf(Locale.ROOT, "weights/step   %.1f MB read per decode step -> %.2f GB/s effective; %.1f MB held%n",
                r.get("weight_bytes").getAsLong() / 1e6, num(r, "effective_gb_per_s"),
                r.get("resident_weight_bytes").getAsLong() / 1e6);
        if (r.get("stream_gb_per_s").isJsonNull()) {
            out.println("streaming read not measured (--bandwidth-mib 0)");
        } else {
            out.printf(Locale.ROOT, "streaming read %.2f GB/s (%s) -> decode reaches %.0f%% of it%s%n",
                    num(r, "stream_gb_per_s"), r.get("stream_method").getAsString(), 100 * num(r, "bandwidth_fraction"),
                    r.has("bandwidth_fraction_runs") ? " (median of the runs' own ratios)" : "");
        }
        if (r.get("compute_gflop_per_s").isJsonNull()) {
            out.println("products       peak rate not measured (--compute-size 0)");
        } else {
            out.printf(Locale.ROOT, "products       %.2f GFLOP per decode step -> %.1f GFLOP/s; engine peak %.1f GFLOP/s (%s) -> %.0f%% of it%n",
                    num(r, "step_gflop"), num(r, "effective_gflop_per_s"), num(r, "compute_gflop_per_s"),
                    r.get("compute_method").getAsString(), 100 * num(r, "compute_fraction"));
        }
        if (!r.get("roofline_tokens_per_s").isJsonNull()) {
            out.printf(Locale.ROOT, "roofline       %.1f tokens/s at most (bound by %s) -> decode reaches %.0f%% of it%n",
                    num(r, "roofline_tokens_per_s"), r.get("roofline_bound").getAsString(),
                    100 * num(r, "roofline_fraction"));
        }
        out.printf(Locale.ROOT, "memory         peak RSS %.0f MiB running, %.0f MiB loading; RSS %+.1f MiB over the last %d decode tokens%n",
                num(r, "peak_rss_mb"), num(r, "load_peak_rss_mb"), num(r, "rss_growth_mb"),
                r.get("rss_window_decode_tokens").getAsLong());
        out.printf(Locale.ROOT, "resident       %.0f MiB anonymous (%.0f MiB weights, %.0f MiB Java heap) + %.0f MiB file-backed after the runs%n",
                num(r, "rss_anon_mb"), r.get("resident_weight_bytes").getAsLong() / (double) (1 << 20),
                num(r, "java_heap_mb"), num(r, "rss_file_mb"));
        String gpu = gpuMemoryLine(r);
        if (gpu != null) {
            out.println(gpu);
        }
        out.printf(Locale.ROOT, "load average   %.2f before, %.2f after (1 min)%n",
                num(r, "load_average_before"), num(r, "load_average_after"));
    }

    /**
     * The text line of the GPU's memory, or {@code null} where it was not measured (the CPU).
     *
     * @param r the result, with {@code peak_gpu_mb} and {@code gpu_total_mb}
     */
    static String gpuMemoryLine(JsonObject r) {
        if (!r.has("peak_gpu_mb") || r.get("peak_gpu_mb").isJsonNull()) {
            return null;
        }
        return String.format(Locale.ROOT,
                "gpu memory     peak %.0f MiB in use on the device of %.0f MiB (cudaMemGetInfo after the load and"
                        + " each run: the CUDA context and PyTorch's cached blocks included)",
                num(r, "peak_gpu_mb"), num(r, "gpu_total_mb"));
    }

    private static double num(JsonObject r, String key) {
        return r.get(key).isJsonNull() ? Double.NaN : r.get(key).getAsDouble();
    }

    /** The config of a model shape (written to a temporary directory and parsed back, as a checkpoint's). */
    static DecoderConfig shapeConfig(ModelShape shape) throws java.io.IOException, InvalidCheckpointException {
        Path dir = Files.createTempDirectory("llmzoo-shape");
        try {
            return RandomCheckpoint.writeConfig(shape, dir);
        } finally {
            deleteTree(dir);
        }
    }

    private static void deleteTree(Path dir) throws java.io.IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
