package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** Drives {@code llmzoo generate} and {@code score} exactly as the README documents them. */
class GenerateAndScoreCliTest {

    private static final Path GPT2 = GoldenCase.dir("gpt2-tiny");

    private static JsonObject golden() throws Exception {
        return GoldenCase.load("gpt2-tiny").json();
    }

    private static String ids(JsonArray array) {
        return TokenIds.join(GoldenCase.longs(array));
    }

    @Test
    void generateIdsPrintsTheGreedyContinuationOnOneLine() throws Exception {
        JsonObject golden = golden();
        JsonArray greedy = golden.getAsJsonArray("greedy_ids");
        CliRunner run =
                CliRunner.run(
                        "generate", "--model", GPT2.toString(),
                        "--prompt-ids", ids(golden.getAsJsonArray("prompt_ids")),
                        "--max-new-tokens", Integer.toString(greedy.size()),
                        "--greedy", "--output", "ids");
        assertEquals(0, run.exitCode, run.err);
        assertEquals(ids(greedy) + System.lineSeparator(), run.out);
    }

    @Test
    void generateJsonReportsIdsAndFinishReason() throws Exception {
        JsonObject golden = golden();
        CliRunner run =
                CliRunner.run(
                        "generate", "--model", GPT2.toString(),
                        "--prompt-ids", ids(golden.getAsJsonArray("prompt_ids")),
                        "--max-new-tokens", "3", "--output", "json");
        assertEquals(0, run.exitCode, run.err);
        JsonObject json = JsonParser.parseString(run.out).getAsJsonObject();
        assertEquals(3, json.getAsJsonArray("ids").size());
        assertEquals("length", json.get("finish_reason").getAsString());
        assertTrue(json.has("text"));
    }

    @Test
    void scoreJsonGivesTheGoldenLogprobsAndTheirPerplexity() throws Exception {
        JsonObject golden = golden();
        JsonArray prompt = golden.getAsJsonArray("prompt_ids");
        JsonArray expected = golden.getAsJsonArray("prompt_logprobs");
        CliRunner run = CliRunner.run("score", "--model", GPT2.toString(), "--ids", ids(prompt), "--output", "json");
        assertEquals(0, run.exitCode, run.err);
        JsonObject json = JsonParser.parseString(run.out).getAsJsonObject();
        JsonArray logprobs = json.getAsJsonArray("token_logprobs");
        assertEquals(prompt.size(), logprobs.size());
        assertTrue(logprobs.get(0).isJsonNull());
        double sum = 0;
        double printedUlp = 0;
        for (int i = 1; i < logprobs.size(); i++) {
            double lp = logprobs.get(i).getAsDouble();
            assertEquals(expected.get(i - 1).getAsDouble(), lp, 1e-3, "token " + i);
            sum += lp;
            printedUlp = Math.max(printedUlp, Math.ulp((float) lp));
        }
        double perplexity = Math.exp(-sum / (prompt.size() - 1));
        // The command averages the float log-probabilities, the JSON prints each within half a float
        // ulp: the mean, the logarithm of the perplexity, moves by no more.
        assertEquals(perplexity, json.get("perplexity").getAsDouble(), perplexity * printedUlp);
    }

    @Test
    void aMissingCheckpointIsOneErrorLineAndANonZeroExit() {
        CliRunner run = CliRunner.run("generate", "--model", "/nonexistent/ckpt", "--prompt-ids", "1,2");
        assertEquals(1, run.exitCode);
        assertEquals("", run.out);
        assertEquals(1, run.err.strip().lines().count(), run.err);
        assertTrue(run.err.startsWith("error: ") && run.err.contains("/nonexistent/ckpt"), run.err);
    }

    @Test
    void aTextPromptWithoutATokenizerSaysToUseIds() {
        CliRunner run = CliRunner.run("generate", "--model", GPT2.toString(), "--prompt", "hi");
        assertEquals(1, run.exitCode);
        assertTrue(run.err.startsWith("error: ") && run.err.contains("no tokenizer"), run.err);
    }

    @Test
    void badUsageIsAnErrorLineWithExitCodeTwo() {
        CliRunner run = CliRunner.run("generate", "--model", GPT2.toString(), "--prompt-ids", "1,x", "--output", "ids");
        assertEquals(1, run.exitCode, run.err);
        assertTrue(run.err.contains("'x' is not a token id"), run.err);
        CliRunner usage = CliRunner.run("generate", "--model", GPT2.toString());
        assertEquals(2, usage.exitCode);
        assertTrue(usage.err.startsWith("error: "), usage.err);
    }
}
