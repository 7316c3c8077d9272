package io.github.djlllmzoo.cli;

import ai.djl.repository.zoo.ModelNotFoundException;

import ai.djl.inference.Predictor;
import ai.djl.translate.TranslateException;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.constrained.OutputConstraint;
import io.github.djlllmzoo.translators.Completion;
import io.github.djlllmzoo.translators.FinishReason;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationListener;
import io.github.djlllmzoo.translators.GenerationOverrides;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.translators.GenerationTranslator;
import io.github.djlllmzoo.translators.TextTokenizer;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code llmzoo generate}: continue a prompt through the model's {@code Predictor<GenerationRequest,
 * GenerationResult>}. Defaults come from the checkpoint's {@code generation_config.json}; options
 * override them.
 */
@Command(
        name = "generate",
        mixinStandardHelpOptions = true,
        description = {
            "Generate a continuation of a prompt.",
            "Decoding follows the checkpoint's generation_config.json (greedy when it has none). Any of"
                    + " --do-sample, --temperature, --top-k, --top-p, --min-p, --seed turns sampling on;"
                    + " --greedy turns it off."
        })
final class GenerateCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Mixin ModelOptions modelOptions;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Prompt prompt;

    static final class Prompt {
        @Option(names = "--prompt", paramLabel = "TEXT", description = "Prompt text (needs the checkpoint's tokenizer).")
        String text;

        @Option(names = "--prompt-ids", paramLabel = "1,2,3", description = "Prompt as comma-separated token ids.")
        String ids;
    }

    @Option(names = "--max-new-tokens", paramLabel = "N", description = "Most tokens to generate per sequence (default: max_new_tokens of the checkpoint's generation_config.json, else 32).")
    Integer maxNewTokens;

    @Option(names = "--greedy", description = "Pick the most likely token at each step.")
    boolean greedy;

    @Option(names = "--do-sample", description = "Sample from the model's distribution.")
    boolean doSample;

    @Option(names = "--temperature", paramLabel = "T", description = "Sampling temperature, >= 0 (0 is greedy).")
    Float temperature;

    @Option(names = "--top-k", paramLabel = "K", description = "Sample among the K most likely tokens (0 disables; default 50).")
    Integer topK;

    @Option(names = "--top-p", paramLabel = "P", description = "Nucleus sampling: the most likely tokens holding probability P, in (0, 1].")
    Float topP;

    @Option(names = "--min-p", paramLabel = "P", description = "Drop tokens less likely than P times the most likely one, in [0, 1].")
    Float minP;

    @Option(names = "--repetition-penalty", paramLabel = "R", description = "Penalize tokens already in prompt or output, > 0 (1 disables).")
    Float repetitionPenalty;

    @Option(names = "--seed", paramLabel = "S", description = "Sampler seed: the same seed gives the same output.")
    Long seed;

    @Option(names = "--stop", paramLabel = "TEXT", description = "Stop when the text contains TEXT; the output ends before it (repeatable).")
    List<String> stop = new ArrayList<>();

    @Option(names = "--num-return-sequences", paramLabel = "N", description = "Sequences to generate (default: 1).")
    Integer numReturnSequences;

    @Option(names = "--stream", description = "Print the text as it is generated (text output, one sequence).")
    boolean stream;

    @Option(names = "--output", defaultValue = "text", paramLabel = "text|ids|json", description = "Output format (default: ${DEFAULT-VALUE}); ids and json print one line per sequence.")
    String output;

    @Option(names = "--json-schema", paramLabel = "FILE", description = "Constrain the output to a JSON value valid against this JSON Schema.")
    Path jsonSchema;

    @Option(names = "--json-object", description = "Constrain the output to a JSON object.")
    boolean jsonObject;

    @Option(names = "--regex", paramLabel = "PATTERN", description = "Constrain the output to text matching this regular expression.")
    String regex;

    @Override
    public Integer call() throws Exception {
        OutputFormat format = OutputFormat.parse(spec, output, OutputFormat.TEXT, OutputFormat.IDS, OutputFormat.JSON);
        checkOptions(format);
        GenerationConfig config = config();
        try (LocalModel model = modelOptions.load()) {
            if (format == OutputFormat.TEXT && !model.hasTokenizer()) {
                throw new IllegalStateException(
                        model.dir() + " has no tokenizer, so no text to print: use --output ids or json");
            }
            TextTokenizer tokenizer = model.hasTokenizer() ? model.tokenizer() : null;
            GenerationRequest request =
                    prompt.ids != null
                            ? GenerationRequest.ofIds(TokenIds.parse("--prompt-ids", prompt.ids), config)
                            : GenerationRequest.of(prompt.text, config);
            PrintWriter out = spec.commandLine().getOut();
            if (stream) {
                request = request.withListener(streamTo(out));
            }
            print(generate(model, new GenerationTranslator(tokenizer, config), request), format, out);
            out.flush();
        }
        return 0;
    }

    /** The checkpoint's defaults with the options applied; read before the weights load. */
    private GenerationConfig config() throws InvalidCheckpointException, IOException, ModelNotFoundException {
        GenerationConfig.Builder defaults =
                GenerationConfig.forCheckpoint(modelOptions.directory(), Configs.read(modelOptions.directory()));
        try {
            return configure(defaults).build();
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    private static GenerationResult generate(
            LocalModel model, GenerationTranslator translator, GenerationRequest request) throws TranslateException {
        try (Predictor<GenerationRequest, GenerationResult> predictor = model.model().newPredictor(translator)) {
            return predictor.predict(request);
        } catch (TranslateException e) {
            if (e.getCause() instanceof RuntimeException) {
                throw (RuntimeException) e.getCause();
            }
            throw e;
        }
    }

    private void checkOptions(OutputFormat format) {
        boolean samplingOption =
                doSample || temperature != null || topK != null || topP != null || minP != null || seed != null;
        if (greedy && samplingOption) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--greedy contradicts --do-sample, --temperature, --top-k, --top-p, --min-p and --seed");
        }
        if (stream && format != OutputFormat.TEXT) {
            throw new ParameterException(spec.commandLine(), "--stream prints text; drop --output " + output);
        }
        if ((jsonSchema != null ? 1 : 0) + (jsonObject ? 1 : 0) + (regex != null ? 1 : 0) > 1) {
            throw new ParameterException(spec.commandLine(), "give at most one of --json-schema, --json-object and --regex");
        }
        if (stream && numReturnSequences != null && numReturnSequences > 1) {
            throw new ParameterException(spec.commandLine(), "--stream prints one sequence; drop --num-return-sequences");
        }
    }

    private GenerationConfig.Builder configure(GenerationConfig.Builder b) throws IOException {
        Boolean sample = greedy ? Boolean.FALSE : doSample ? Boolean.TRUE : null;
        return new GenerationOverrides(
                        maxNewTokens, sample, temperature, topK, topP, minP, repetitionPenalty, stop, seed,
                        numReturnSequences)
                .applyTo(b)
                .optConstraint(constraint());
    }

    /** The constraint of --json-schema, --json-object or --regex, or {@code null}. */
    private OutputConstraint constraint() throws IOException {
        if (jsonSchema != null) {
            if (!Files.isRegularFile(jsonSchema)) {
                throw new ParameterException(spec.commandLine(), "--json-schema: no file " + jsonSchema);
            }
            return OutputConstraint.jsonSchema(Files.readString(jsonSchema, StandardCharsets.UTF_8));
        }
        if (jsonObject) {
            return OutputConstraint.anyJsonObject();
        }
        return regex != null ? OutputConstraint.regex(regex) : null;
    }

    private static GenerationListener streamTo(PrintWriter out) {
        return new GenerationListener() {
            @Override
            public void onText(int sequence, String piece) {
                out.print(piece);
                out.flush();
            }

            @Override
            public void onFinish(int sequence, FinishReason reason) {
                out.println();
                out.flush();
            }
        };
    }

    private void print(GenerationResult result, OutputFormat format, PrintWriter out) {
        List<Completion> completions = result.completions();
        for (int n = 0; n < completions.size(); n++) {
            Completion completion = completions.get(n);
            switch (format) {
                case IDS:
                    out.println(TokenIds.join(completion.tokenIds()));
                    break;
                case JSON:
                    JsonObject json = new JsonObject();
                    JsonArray ids = new JsonArray();
                    for (long id : completion.tokenIds()) {
                        ids.add(id);
                    }
                    json.add("ids", ids);
                    json.addProperty("text", completion.text());
                    json.addProperty("finish_reason", completion.finishReason().jsonName());
                    out.println(Json.GSON.toJson(json));
                    break;
                default:
                    if (stream) {
                        break;
                    }
                    if (completions.size() > 1) {
                        out.println("--- sequence " + (n + 1) + " of " + completions.size() + " ---");
                    }
                    out.println(completion.text());
            }
        }
    }
}
