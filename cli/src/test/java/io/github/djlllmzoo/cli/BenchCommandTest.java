package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.engine.Engine;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.cpu.CpuIsa;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import io.github.djlllmzoo.zoo.safetensors.TensorInfo;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Drives {@code llmzoo bench} on the tiny golden GPT-2 (figures are checked for sense, never for speed). */
class BenchCommandTest {

    private static final Path GPT2 = GoldenCase.dir("gpt2-tiny");

    private static JsonObject golden() throws Exception {
        return GoldenCase.load("gpt2-tiny").json();
    }

    private static String ids(JsonArray array) {
        return TokenIds.join(GoldenCase.longs(array));
    }

    private static JsonObject bench(String... extra) {
        List<String> args =
                new java.util.ArrayList<>(
                        List.of("bench", "--model", GPT2.toString(), "--runs", "2", "--bandwidth-mib", "16",
                                "--output", "json"));
        args.addAll(List.of(extra));
        CliRunner run = CliRunner.run(args.toArray(new String[0]));
        assertEquals(0, run.exitCode, run.err);
        return JsonParser.parseString(run.out).getAsJsonObject();
    }

    @Test
    void jsonHasEveryFigureUnderItsDocumentedKey() {
        JsonObject r = bench("--prompt-tokens", "16", "--new-tokens", "8", "--long-positions", "120");
        for (String key :
                List.of("prefill_tokens_per_s", "decode_tokens_per_s", "decode_ms_early", "decode_ms_late",
                        "peak_rss_mb", "load_peak_rss_mb", "rss_anon_mb", "rss_file_mb", "java_heap_mb",
                        "effective_gb_per_s", "stream_gb_per_s")) {
            double value = r.get(key).getAsDouble();
            assertTrue(Double.isFinite(value) && value > 0, key + " = " + value);
        }
        assertTrue(r.get("weight_bytes").getAsLong() > 0);
        assertEquals(CpuIsa.selected().id(), r.get("cpu_isa").getAsString(), "the kernels' instruction set");
        assertEquals(8, r.getAsJsonArray("output_ids").size());
        assertEquals(2, r.getAsJsonArray("decode_tokens_per_s_runs").size());
        double implied = r.get("weight_bytes").getAsLong() * r.get("decode_tokens_per_s").getAsDouble() / 1e9;
        assertEquals(implied, r.get("effective_gb_per_s").getAsDouble(), fewUlps(implied));
    }

    @Test
    void residentMemoryIsSplitIntoAnonymousPagesHoldingTheWeightsAndFileBackedPages() {
        JsonObject r = bench("--prompt-tokens", "8", "--new-tokens", "4", "--long-positions", "0");
        double anon = r.get("rss_anon_mb").getAsDouble();
        double file = r.get("rss_file_mb").getAsDouble();
        assumeTrue(anon >= 0 && file >= 0, "no RssAnon/RssFile in /proc/self/status");
        assertTrue(anon >= r.get("resident_weight_bytes").getAsLong() / (double) (1 << 20),
                "the weights are anonymous memory: " + anon + " MiB");
        // both read after the runs, before the peak, which is at least the resident size then, up to
        // what the kernel's counters may not have folded in yet
        assertTrue(anon + file <= r.get("peak_rss_mb").getAsDouble() + rssCounterSlackMib(), r.toString());
    }

    /**
     * How far RssAnon + RssFile may read above VmHWM though the peak is taken later: Linux counts a
     * process's resident pages in per-CPU counters (anonymous, file, shared memory) and folds a
     * CPU's count into the total only once it moves by the batch, max(32, 2 x CPUs) pages, so each
     * counter read, and the peak made from them, may lag by up to the batch on every CPU.
     */
    private static double rssCounterSlackMib() {
        int cpus = Runtime.getRuntime().availableProcessors();
        long batchPages = Math.max(32, 2L * cpus);
        long pageBytes = 4096;
        int counters = 3;
        return 2.0 * counters * cpus * batchPages * pageBytes / (1 << 20); // the reading and the peak, each
    }

    @Test
    void eachTimedRunIsPairedWithAStreamingReadAndTheFractionIsTheMedianOfTheirRatios() {
        JsonObject r = bench("--prompt-tokens", "16", "--new-tokens", "8", "--long-positions", "0"); // 2 runs
        assumeTrue(r.get("peak_rss_reset_after_load").getAsBoolean(), "no peak reset: the read runs once, after the runs");
        JsonArray decode = r.getAsJsonArray("decode_tokens_per_s_runs");
        JsonArray streams = r.getAsJsonArray("stream_gb_per_s_runs");
        JsonArray fractions = r.getAsJsonArray("bandwidth_fraction_runs");
        assertEquals(2, streams.size());
        long bytes = r.get("weight_bytes").getAsLong();
        double[] expected = new double[2];
        for (int i = 0; i < 2; i++) {
            expected[i] = bytes * decode.get(i).getAsDouble() / 1e9 / streams.get(i).getAsDouble();
            assertEquals(expected[i], fractions.get(i).getAsDouble(), fewUlps(expected[i]), "run " + i);
        }
        double median = (expected[0] + expected[1]) / 2;
        assertEquals(median, r.get("bandwidth_fraction").getAsDouble(), fewUlps(median));
        assertTrue(r.get("stream_method").getAsString().contains("after each timed run"));
    }

    @Test
    void benchGeneratesTheGreedyContinuation() throws Exception {
        JsonObject golden = golden();
        JsonArray greedy = golden.getAsJsonArray("greedy_ids");
        JsonObject r =
                bench("--prompt-ids", ids(golden.getAsJsonArray("prompt_ids")),
                        "--new-tokens", Integer.toString(greedy.size()), "--long-positions", "0");
        assertEquals(ids(greedy), ids(r.getAsJsonArray("output_ids")));
        assertTrue(r.get("decode_ms_early").isJsonNull(), "not measured with --long-positions 0");
    }

    @Test
    void weightBytesAreEveryTensorOnceExceptPositionRowsNotRead() throws Exception {
        long all = 0;
        long positionTable = 0;
        long width = 0;
        try (SafeTensorsReader reader = SafeTensorsReader.open(GPT2.resolve("model.safetensors"))) {
            for (TensorInfo info : reader.tensors().values()) {
                long bytes = info.toShape().size() * 4; // read as float32
                all += bytes;
                if (info.name().endsWith("wpe.weight")) {
                    positionTable = bytes;
                    width = info.toShape().get(1);
                }
            }
        }
        int batch = 3;
        // The tied wte is read whole by the LM head; of wpe a step reads one row per sequence.
        long expected = all - positionTable + batch * width * 4;
        JsonObject r = bench("--batch", Integer.toString(batch), "--prompt-tokens", "4", "--new-tokens", "2",
                "--long-positions", "0");
        assertEquals(expected, r.get("weight_bytes").getAsLong());
        assertEquals(3, r.get("batch").getAsInt());
    }

    @Test
    void theRooflineIsTheSlowerOfReadingTheWeightsAndDoingTheProducts() throws Exception {
        long matrixElements = 0;
        try (SafeTensorsReader reader = SafeTensorsReader.open(GPT2.resolve("model.safetensors"))) {
            for (TensorInfo info : reader.tensors().values()) {
                boolean lookupOrTiedCopy = info.name().endsWith("wpe.weight") || info.name().startsWith("lm_head");
                if (info.toShape().dimension() == 2 && !lookupOrTiedCopy) {
                    matrixElements += info.toShape().size(); // the tied wte is the LM head's matrix
                }
            }
        }
        int batch = 2;
        JsonObject r = bench("--batch", Integer.toString(batch), "--prompt-tokens", "4", "--new-tokens", "4",
                "--long-positions", "0", "--compute-size", "64");
        double stepGflop = r.get("step_gflop").getAsDouble();
        assertEquals(2.0 * batch * matrixElements / 1e9, stepGflop, fewUlps(stepGflop));
        double decode = r.get("decode_tokens_per_s").getAsDouble();
        double peak = r.get("compute_gflop_per_s").getAsDouble();
        double stream = r.get("stream_gb_per_s").getAsDouble();
        assertTrue(peak > 0, "peak " + peak);
        double effective = stepGflop * decode / batch;
        assertEquals(effective, r.get("effective_gflop_per_s").getAsDouble(), fewUlps(effective));
        assertEquals(effective / peak, r.get("compute_fraction").getAsDouble(), fewUlps(effective / peak));
        double readSeconds = r.get("weight_bytes").getAsLong() / (stream * 1e9);
        double productSeconds = stepGflop / peak;
        double roofline = batch / Math.max(readSeconds, productSeconds);
        assertEquals(roofline, r.get("roofline_tokens_per_s").getAsDouble(), fewUlps(roofline));
        assertEquals(productSeconds > readSeconds ? "compute" : "bandwidth", r.get("roofline_bound").getAsString());
        assertEquals(decode / roofline, r.get("roofline_fraction").getAsDouble(), fewUlps(decode / roofline));

        CliRunner run = CliRunner.run("bench", "--model", GPT2.toString(), "--runs", "1", "--prompt-tokens", "4",
                "--new-tokens", "2", "--long-positions", "0", "--compute-size", "0", "--bandwidth-mib", "0",
                "--output", "json");
        assertEquals(0, run.exitCode, run.err);
        JsonObject skipped = JsonParser.parseString(run.out).getAsJsonObject();
        assertTrue(skipped.get("compute_gflop_per_s").isJsonNull());
        assertTrue(skipped.get("roofline_tokens_per_s").isJsonNull());
        assertEquals("not measured", skipped.get("roofline_bound").getAsString());
    }

    @Test
    void aRandomShapeNeedsNoCheckpoint() {
        CliRunner run = CliRunner.run("bench", "--shape", "gpt2-tiny", "--runs", "1", "--prompt-tokens", "8",
                "--new-tokens", "4", "--long-positions", "0", "--bandwidth-mib", "0", "--output", "json");
        assertEquals(0, run.exitCode, run.err);
        JsonObject r = JsonParser.parseString(run.out).getAsJsonObject();
        assertTrue(r.get("model").getAsString().startsWith("gpt2-tiny"));
        assertTrue(r.get("stream_gb_per_s").isJsonNull(), "bandwidth not measured with --bandwidth-mib 0");
        assertTrue(r.get("peak_gpu_mb").isJsonNull(), "no GPU memory on the CPU");
        assertTrue(r.get("gpu_total_mb").isJsonNull());
        assertEquals(null, BenchCommand.gpuMemoryLine(r), "no GPU line on the CPU");
    }

    @Test
    void theGpuMemoryLineSaysThePeakInUseAndTheDevicesMemory() {
        JsonObject r = new JsonObject();
        r.addProperty("peak_gpu_mb", 5120.4);
        r.addProperty("gpu_total_mb", 81559.0);
        String line = BenchCommand.gpuMemoryLine(r);
        assertTrue(line.startsWith("gpu memory     peak 5120 MiB in use on the device of 81559 MiB"), line);
    }

    /** Float32 holds 4 bytes a projection weight, bfloat16 and float16 2, int8 1 plus a 2-byte scale per 32. */
    @Test
    void compressedDtypesOnTheCpuReadAndHoldFewerWeightBytesAndSayWhichTheyAre() {
        java.util.Map<String, JsonObject> results = new java.util.HashMap<>();
        for (String dtype : List.of("float32", "bfloat16", "float16", "int8")) {
            results.put(dtype, tinyBench(dtype));
        }
        long float32 = results.get("float32").get("resident_weight_bytes").getAsLong();
        long bf16 = results.get("bfloat16").get("resident_weight_bytes").getAsLong();
        long int8 = results.get("int8").get("resident_weight_bytes").getAsLong();
        assertTrue(bf16 < float32 && int8 < bf16, float32 + " " + bf16 + " " + int8);
        assertEquals(bf16, results.get("float16").get("resident_weight_bytes").getAsLong(), "float16 holds 2 bytes");
        long projections = 2 * (float32 - bf16) / 4; // elements of the projection weights: 4 - 2 bytes each
        assertEquals(float32 - projections * 4 + projections + projections / 32 * 2, int8, "int8 holds 1 + 2/32 bytes");
        assertTrue(results.get("int8").get("weight_bytes").getAsLong()
                < results.get("float32").get("weight_bytes").getAsLong(), "a step reads fewer bytes");
    }

    /** {@code bench --dtype q4_k} runs the q4_k weights and says so; they hold fewer bytes than float32's. */
    @Test
    void q4kBenchesAndHoldsFewerBytesThanFloat32() {
        JsonObject float32 = tinyBench("float32");
        JsonObject q4k = tinyBench("q4_k");
        assertTrue(q4k.get("resident_weight_bytes").getAsLong() < float32.get("resident_weight_bytes").getAsLong(),
                q4k + " vs " + float32);
    }

    /** One short {@code bench} of the gpt2-tiny shape in {@code dtype}: its JSON, which names the dtype. */
    private static JsonObject tinyBench(String dtype) {
        CliRunner run = CliRunner.run("bench", "--shape", "gpt2-tiny", "--dtype", dtype, "--runs", "1",
                "--prompt-tokens", "8", "--new-tokens", "2", "--long-positions", "0", "--bandwidth-mib", "0",
                "--compute-size", "0", "--output", "json");
        assertEquals(0, run.exitCode, run.err);
        JsonObject r = JsonParser.parseString(run.out).getAsJsonObject();
        assertEquals(dtype, r.get("dtype").getAsString());
        return r;
    }

    /** {@code bench --kv-cache-dtype float16} runs the int4 weights over a float16 cache and says so. */
    @Test
    void aFloat16KvCacheBenchesAndIsNamedInTheResult() {
        assertEquals("float32", tinyBench("int4").get("kv_cache_dtype").getAsString(), "the default: the compute type");
        CliRunner run = CliRunner.run("bench", "--shape", "gpt2-tiny", "--dtype", "int4", "--kv-cache-dtype", "float16",
                "--runs", "1", "--prompt-tokens", "8", "--new-tokens", "2", "--long-positions", "0", "--bandwidth-mib",
                "0", "--compute-size", "0", "--output", "json");
        assertEquals(0, run.exitCode, run.err);
        JsonObject r = JsonParser.parseString(run.out).getAsJsonObject();
        assertEquals("float16", r.get("kv_cache_dtype").getAsString());
        assertTrue(r.get("decode_tokens_per_s").getAsDouble() > 0, run.out);
    }

    @Test
    void anUnknownDtypeIsAUsageErrorNamingTheValue() {
        CliRunner run = CliRunner.run("bench", "--shape", "gpt2-tiny", "--dtype", "int3");
        assertEquals(2, run.exitCode);
        assertTrue(run.err.contains("--dtype must be float32, bfloat16, float16, int8, int4, int6 or q4_k, not 'int3'"), run.err);
    }

    @Test
    void gpuWithoutAGpuIsAClearError() {
        assumeTrue(Engine.getEngine("PyTorch").getGpuCount() == 0, "a GPU is present");
        CliRunner run = CliRunner.run("generate", "--model", GPT2.toString(), "--prompt-ids", "1,2", "--device", "gpu");
        assertEquals(2, run.exitCode);
        assertTrue(run.err.contains("sees no GPU"), run.err);
    }

    @Test
    void aPromptLongerThanTheWindowIsRefused() {
        CliRunner run = CliRunner.run("bench", "--model", GPT2.toString(), "--prompt-tokens", "120",
                "--new-tokens", "20", "--bandwidth-mib", "0");
        assertEquals(1, run.exitCode);
        assertTrue(run.err.contains("context window of 128"), run.err);
    }

    /**
     * The figures are redone here in float64 from the reported inputs by the command's own few
     * operations, at most in another order: each of them rounds by half an ulp.
     */
    private static double fewUlps(double value) {
        return 4 * Math.ulp(value);
    }
}
