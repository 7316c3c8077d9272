package io.github.djlllmzoo.cli;

import ai.djl.ndarray.NDManager;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.benchmarks.ConstrainedDecodeBenchmark;
import io.github.djlllmzoo.benchmarks.StreamingBandwidth;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.constrained.OutputConstraint;
import io.github.djlllmzoo.constrained.TokenVocabulary;
import io.github.djlllmzoo.translators.TextTokenizer;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code llmzoo bench-constrained}: what an output constraint costs. Times decode steps sampled at
 * temperature 1 with and without a JSON Schema masking the logits (median step, per batch size),
 * and the time to compile each schema until it can mask a first step.
 */
@Command(
        name = "bench-constrained",
        mixinStandardHelpOptions = true,
        description = "Measure the cost of constrained decoding: a step with a JSON Schema against one without, and schema compile time.")
final class BenchConstrainedCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @ArgGroup(exclusive = true, multiplicity = "1")
    BenchCommand.Source source;

    @Mixin ComputeOptions compute;

    @Option(names = "--tokenizer", paramLabel = "DIR", description = "Tokenizer directory (tokenizer.json); default: the --model directory. Needed with --shape.")
    Path tokenizer;

    @Option(names = "--json-schema", required = true, arity = "1..*", paramLabel = "FILE", description = "JSON Schema files, or files of a JSON array of schemas: all are compiled (median compile time), the first constrains the timed steps.")
    List<Path> schemas;

    @Option(names = "--batch", split = ",", defaultValue = "1,8", paramLabel = "B", description = "Batch sizes (default: ${DEFAULT-VALUE}).")
    List<Integer> batches;

    @Option(names = "--steps", defaultValue = "256", paramLabel = "N", description = "Decode steps timed per mode (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--prompt-tokens", defaultValue = "16", paramLabel = "N", description = "Prompt length, random ids (default: ${DEFAULT-VALUE}).")
    int promptTokens;

    @Option(names = "--seed", defaultValue = "42", paramLabel = "N", description = "Seed of random weights, prompts and samplers (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--output", defaultValue = "text", paramLabel = "text|json", description = "Output format (default: ${DEFAULT-VALUE}).")
    String output;

    @Override
    public Integer call() throws Exception {
        OutputFormat format = OutputFormat.parse(spec, output, OutputFormat.TEXT, OutputFormat.JSON);
        if (steps < 1 || promptTokens < 1 || batches.stream().anyMatch(b -> b < 1)) {
            throw new ParameterException(spec.commandLine(), "--steps, --prompt-tokens and --batch must be at least 1");
        }
        Path tokenizerDir = tokenizer != null ? tokenizer : source.model;
        if (tokenizerDir == null) {
            throw new ParameterException(spec.commandLine(), "--shape needs --tokenizer DIR");
        }
        List<OutputConstraint> constraints = new ArrayList<>();
        for (Path file : schemas) {
            constraints.addAll(schemas(file));
        }
        JsonObject result = new JsonObject();
        try (TextTokenizer text = TextTokenizer.load(tokenizerDir)) {
            TokenVocabulary vocabulary = text.tokenVocabulary();
            result.addProperty("tokenizer", tokenizerDir.toString());
            result.addProperty("tokenizer_tokens", vocabulary.size());
            try (BenchModel model = BenchModel.open(source, compute, seed)) {
                result.addProperty("model", model.label);
                measure(model.block, model.manager, vocabulary, model.eosTokenIds, constraints, result);
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

    /**
     * The schemas of a file: the file is one schema, or a JSON array of schemas (or of objects whose
     * {@code schema} field is one, as the constrained module's test schemas are).
     */
    private static List<OutputConstraint> schemas(Path file) throws java.io.IOException {
        JsonElement json;
        try {
            json = JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8));
        } catch (JsonParseException e) {
            throw new IllegalArgumentException(file + ": not JSON: " + e.getMessage(), e);
        }
        List<OutputConstraint> out = new ArrayList<>();
        if (!json.isJsonArray()) {
            out.add(OutputConstraint.jsonSchema(json.toString()));
            return out;
        }
        for (JsonElement e : json.getAsJsonArray()) {
            boolean wrapped = e.isJsonObject() && e.getAsJsonObject().has("schema");
            out.add(OutputConstraint.jsonSchema((wrapped ? e.getAsJsonObject().get("schema") : e).toString()));
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException(file + ": an empty list of schemas");
        }
        return out;
    }

    private void measure(
            CausalLmBlock block,
            NDManager manager,
            TokenVocabulary vocabulary,
            List<Integer> eos,
            List<OutputConstraint> constraints,
            JsonObject result) {
        DecoderConfig config = block.config();
        if (config.vocabSize() < vocabulary.size()) {
            throw new IllegalArgumentException(
                    "the tokenizer has " + vocabulary.size() + " tokens, more than the model's vocabulary of "
                            + config.vocabSize());
        }
        if (promptTokens + steps + 1 > config.maxPositions()) {
            throw new IllegalArgumentException(
                    "--prompt-tokens plus --steps exceed the model's context window of " + config.maxPositions());
        }
        ConstrainedDecodeBenchmark bench = new ConstrainedDecodeBenchmark(block, manager, vocabulary, eos);
        double[] compile = new double[constraints.size()];
        for (int i = 0; i < compile.length; i++) {
            compile[i] = bench.compileMillis(constraints.get(i));
        }
        result.addProperty("schemas", constraints.size());
        result.addProperty("compile_ms_median", StreamingBandwidth.median(compile.clone()));
        JsonArray compileRuns = new JsonArray();
        for (double c : compile) {
            compileRuns.add(c);
        }
        result.add("compile_ms", compileRuns);
        JsonArray runs = new JsonArray();
        for (int batch : batches) {
            long[][] prompts = new long[batch][];
            for (int i = 0; i < batch; i++) {
                prompts[i] = new Random(seed + i).longs(promptTokens, 0, vocabulary.size()).toArray();
            }
            bench.stepMillis(null, prompts, Math.min(steps, 16), seed); // warm-up
            double free = StreamingBandwidth.median(bench.stepMillis(null, prompts, steps, seed));
            double constrained = StreamingBandwidth.median(bench.stepMillis(constraints.get(0), prompts, steps, seed));
            JsonObject run = new JsonObject();
            run.addProperty("batch", batch);
            run.addProperty("steps", steps);
            run.addProperty("unconstrained_step_ms_median", free);
            run.addProperty("constrained_step_ms_median", constrained);
            run.addProperty("constrained_over_unconstrained", constrained / free);
            runs.add(run);
        }
        result.add("decode", runs);
        result.addProperty("device", compute.device().toString());
    }

    private static void printText(PrintWriter out, JsonObject r) {
        out.printf(Locale.ROOT, "model          %s on %s; tokenizer %s (%d tokens)%n", r.get("model").getAsString(),
                r.get("device").getAsString(), r.get("tokenizer").getAsString(), r.get("tokenizer_tokens").getAsInt());
        out.printf(Locale.ROOT, "compile        %.2f ms median over %d schemas (grammar and first mask)%n",
                r.get("compile_ms_median").getAsDouble(), r.get("schemas").getAsInt());
        for (var e : r.getAsJsonArray("decode")) {
            JsonObject run = e.getAsJsonObject();
            out.printf(Locale.ROOT, "batch %-3d      step %.2f ms unconstrained, %.2f ms constrained (x%.3f), median of %d steps%n",
                    run.get("batch").getAsInt(), run.get("unconstrained_step_ms_median").getAsDouble(),
                    run.get("constrained_step_ms_median").getAsDouble(),
                    run.get("constrained_over_unconstrained").getAsDouble(), run.get("steps").getAsInt());
        }
    }
}
