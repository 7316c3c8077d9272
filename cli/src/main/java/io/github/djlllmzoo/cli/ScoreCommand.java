package io.github.djlllmzoo.cli;

import com.google.gson.JsonArray;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code llmzoo score}: log-probability of each token and the perplexity of a text. */
@Command(name = "score", mixinStandardHelpOptions = true, description = "Score a text: per-token log-probabilities and perplexity.")
final class ScoreCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Mixin ModelOptions modelOptions;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Input input;

    static final class Input {
        @Option(names = "--text", paramLabel = "TEXT", description = "Text to score (needs the checkpoint's tokenizer).")
        String text;

        @Option(names = "--ids", paramLabel = "1,2,3", description = "Token ids to score, comma-separated.")
        String ids;
    }

    @Option(names = "--output", defaultValue = "text", paramLabel = "text|json", description = "Output format (default: ${DEFAULT-VALUE}).")
    String output;

    @Override
    public Integer call() throws Exception {
        OutputFormat format = OutputFormat.parse(spec, output, OutputFormat.TEXT, OutputFormat.JSON);
        try (LocalModel model = modelOptions.load()) {
            long[] ids = input.ids != null ? TokenIds.parse("--ids", input.ids) : model.tokenizer().encode(input.text);
            if (ids.length < 2) {
                throw new IllegalArgumentException(
                        "need at least 2 tokens to score, got " + ids.length);
            }
            float[] logprobs = model.generator().scoreTokens(ids);
            double sum = 0;
            for (float lp : logprobs) {
                sum += lp;
            }
            double perplexity = Math.exp(-sum / logprobs.length);
            PrintWriter out = spec.commandLine().getOut();
            if (format == OutputFormat.JSON) {
                JsonObject json = new JsonObject();
                JsonArray idArray = new JsonArray();
                JsonArray lpArray = new JsonArray();
                lpArray.add(JsonNull.INSTANCE);
                for (long id : ids) {
                    idArray.add(id);
                }
                for (float lp : logprobs) {
                    lpArray.add(lp);
                }
                json.add("ids", idArray);
                json.add("token_logprobs", lpArray);
                json.addProperty("perplexity", perplexity);
                out.println(Json.GSON.toJson(json));
            } else {
                for (int i = 0; i < ids.length; i++) {
                    String piece = model.hasTokenizer() ? model.tokenizer().decode(new long[] {ids[i]}) : "";
                    String lp = i == 0 ? "-" : String.format(Locale.ROOT, "%.4f", logprobs[i - 1]);
                    out.printf(Locale.ROOT, "%6d  %10s  %s%n", ids[i], lp, Json.GSON.toJson(piece));
                }
                out.printf(Locale.ROOT, "perplexity: %.4f%n", perplexity);
            }
            out.flush();
        }
        return 0;
    }
}
