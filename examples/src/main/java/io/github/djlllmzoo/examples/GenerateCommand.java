package io.github.djlllmzoo.examples;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.translators.GeneratedSequence;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code llmzoo generate}: continue a prompt. */
@Command(name = "generate", mixinStandardHelpOptions = true, description = "Generate a continuation of a prompt.")
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

    @Option(names = "--max-new-tokens", defaultValue = "32", paramLabel = "N", description = "Most tokens to generate (default: ${DEFAULT-VALUE}).")
    int maxNewTokens;

    @Option(names = "--greedy", description = "Pick the most likely token at each step (the default decoding).")
    boolean greedy;

    @Option(names = "--output", defaultValue = "text", paramLabel = "text|ids|json", description = "Output format (default: ${DEFAULT-VALUE}).")
    String output;

    @Override
    public Integer call() throws Exception {
        OutputFormat format = OutputFormat.parse(spec, output, OutputFormat.TEXT, OutputFormat.IDS, OutputFormat.JSON);
        try (LocalModel model = modelOptions.load()) {
            long[] promptIds =
                    prompt.ids != null
                            ? TokenIds.parse("--prompt-ids", prompt.ids)
                            : model.tokenizer().encode(prompt.text);
            GenerationConfig config =
                    GenerationConfig.builder()
                            .maxNewTokens(maxNewTokens)
                            .eosTokenIds(model.eosTokenIds())
                            .build();
            GeneratedSequence result = model.generator().generateGreedy(promptIds, config);
            PrintWriter out = spec.commandLine().getOut();
            switch (format) {
                case IDS:
                    out.println(TokenIds.join(result.tokenIds()));
                    break;
                case JSON:
                    JsonObject json = new JsonObject();
                    JsonArray ids = new JsonArray();
                    for (long id : result.tokenIds()) {
                        ids.add(id);
                    }
                    json.add("ids", ids);
                    json.addProperty(
                            "text",
                            model.hasTokenizer()
                                    ? model.tokenizer().decodeContinuation(promptIds, result.tokenIds())
                                    : null);
                    json.addProperty("finish_reason", result.finishReason().jsonName());
                    out.println(Json.GSON.toJson(json));
                    break;
                default:
                    out.println(model.tokenizer().decodeContinuation(promptIds, result.tokenIds()));
            }
            out.flush();
        }
        return 0;
    }
}
