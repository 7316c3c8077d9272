package io.github.djlllmzoo.cli;

import com.google.gson.JsonObject;
import io.github.djlllmzoo.benchmarks.MixedAdapterBenchmark;
import io.github.djlllmzoo.benchmarks.StreamingBandwidth;
import java.io.PrintWriter;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code llmzoo bench-adapters}: what serving LoRA adapters in one batch costs. Times greedy
 * decode steps of a batch of base-model rows, of the same batch with its rows cycling over random
 * adapters and the base model (an adapter per row), and with every row on one adapter; reports
 * each as tokens per second (batch / median step) and the mixed batch's share of the base one.
 */
@Command(
        name = "bench-adapters",
        mixinStandardHelpOptions = true,
        description = "Measure decode throughput of a batch mixing LoRA adapters and the base model against a batch of the base model alone.")
final class BenchAdaptersCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @ArgGroup(exclusive = true, multiplicity = "1")
    BenchCommand.Source source;

    @Mixin ComputeOptions compute;

    @Option(names = "--batch", defaultValue = "8", paramLabel = "B", description = "Rows of the batch (default: ${DEFAULT-VALUE}).")
    int batch;

    @Option(names = "--adapters", defaultValue = "4", paramLabel = "N", description = "Random adapters the mixed batch's rows cycle over, with the base model (default: ${DEFAULT-VALUE}).")
    int adapters;

    @Option(names = "--rank", defaultValue = "8", paramLabel = "R", description = "The adapters' rank, over every projection of the layers (default: ${DEFAULT-VALUE}).")
    int rank;

    @Option(names = "--steps", defaultValue = "128", paramLabel = "N", description = "Decode steps timed per round and batch (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--rounds", defaultValue = "3", paramLabel = "N", description = "Rounds of base, mixed and single-adapter batches in turn; each figure is the median over all its steps (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--prompt-tokens", defaultValue = "16", paramLabel = "N", description = "Prompt length, random ids (default: ${DEFAULT-VALUE}).")
    int promptTokens;

    @Option(names = "--seed", defaultValue = "42", paramLabel = "N", description = "Seed of random weights, adapters and prompts (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--output", defaultValue = "text", paramLabel = "text|json", description = "Output format (default: ${DEFAULT-VALUE}).")
    String output;

    @Override
    public Integer call() throws Exception {
        OutputFormat format = OutputFormat.parse(spec, output, OutputFormat.TEXT, OutputFormat.JSON);
        if (batch < 1 || adapters < 1 || rank < 1 || steps < 1 || rounds < 1 || promptTokens < 1) {
            throw new ParameterException(spec.commandLine(),
                    "--batch, --adapters, --rank, --steps, --rounds and --prompt-tokens must be at least 1");
        }
        JsonObject result = new JsonObject();
        try (BenchModel model = BenchModel.open(source, compute, seed)) {
            if (promptTokens + steps > model.block.config().maxPositions()) {
                throw new ParameterException(spec.commandLine(),
                        "--prompt-tokens plus --steps exceed the model's context window of "
                                + model.block.config().maxPositions());
            }
            result.addProperty("model", model.label);
            result.addProperty("device", compute.device().toString());
            try (MixedAdapterBenchmark bench =
                    new MixedAdapterBenchmark(model.block, model.manager, model.dataType, adapters, rank, seed)) {
                measure(bench, result);
            }
        }
        PrintWriter out = spec.commandLine().getOut();
        if (format == OutputFormat.JSON) {
            out.println(Json.GSON.toJson(result));
        } else {
            printText(out, result);
        }
        out.flush();
        return 0;
    }

    private void measure(MixedAdapterBenchmark bench, JsonObject result) {
        List<String> base = Collections.nCopies(batch, null);
        List<String> mixed = bench.mixedRows(batch);
        List<String> single = Collections.nCopies(batch, bench.adapterNames().get(0));
        List<List<String>> modes = List.of(base, mixed, single);
        for (List<String> rows : modes) {
            bench.stepMillis(rows, promptTokens, Math.min(steps, 8), seed); // warm-up
        }
        double[][] millis = new double[modes.size()][steps * rounds];
        for (int round = 0; round < rounds; round++) { // in turn, so a change in the machine's load touches all
            for (int m = 0; m < modes.size(); m++) {
                System.arraycopy(bench.stepMillis(modes.get(m), promptTokens, steps, seed), 0, millis[m], round * steps, steps);
            }
        }
        String[] keys = {"base", "mixed", "single_adapter"};
        double baseRate = 0;
        for (int m = 0; m < modes.size(); m++) {
            double median = StreamingBandwidth.median(millis[m]);
            double rate = batch * 1000.0 / median;
            baseRate = m == 0 ? rate : baseRate;
            result.addProperty(keys[m] + "_step_ms_median", median);
            result.addProperty(keys[m] + "_tokens_per_s", rate);
        }
        result.addProperty("mixed_over_base", result.get("mixed_tokens_per_s").getAsDouble() / baseRate);
        result.addProperty("single_adapter_over_base", result.get("single_adapter_tokens_per_s").getAsDouble() / baseRate);
        result.addProperty("batch", batch);
        result.addProperty("adapters", adapters);
        result.addProperty("rank", rank);
        result.addProperty("steps", steps * rounds);
        result.addProperty("mixed_rows", String.valueOf(mixed));
    }

    private static void printText(PrintWriter out, JsonObject r) {
        out.printf(Locale.ROOT, "model          %s on %s; batch %d, %d adapters of rank %d over every layer projection%n",
                r.get("model").getAsString(), r.get("device").getAsString(), r.get("batch").getAsInt(),
                r.get("adapters").getAsInt(), r.get("rank").getAsInt());
        out.printf(Locale.ROOT, "base           %.1f tokens/s (step %.2f ms median of %d)%n",
                r.get("base_tokens_per_s").getAsDouble(), r.get("base_step_ms_median").getAsDouble(), r.get("steps").getAsInt());
        out.printf(Locale.ROOT, "mixed          %.1f tokens/s (step %.2f ms): x%.3f of base; rows %s%n",
                r.get("mixed_tokens_per_s").getAsDouble(), r.get("mixed_step_ms_median").getAsDouble(),
                r.get("mixed_over_base").getAsDouble(), r.get("mixed_rows").getAsString());
        out.printf(Locale.ROOT, "one adapter    %.1f tokens/s (step %.2f ms): x%.3f of base%n",
                r.get("single_adapter_tokens_per_s").getAsDouble(), r.get("single_adapter_step_ms_median").getAsDouble(),
                r.get("single_adapter_over_base").getAsDouble());
    }
}
