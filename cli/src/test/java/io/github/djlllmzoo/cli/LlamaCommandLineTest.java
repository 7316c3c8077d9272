package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/** {@code llmzoo generate} and {@code score} on the Llama golden checkpoint {@code llama-gqa}. */
class LlamaCommandLineTest {

    private static Path dir;
    private static long[] promptIds;
    private static double[] promptLogprobs;
    private static long[] greedyIds;

    @BeforeAll
    static void loadGolden() throws Exception {
        GoldenCase golden = GoldenCase.load("llama-gqa");
        dir = golden.dir();
        promptIds = golden.ids("prompt_ids");
        greedyIds = golden.ids("greedy_ids");
        promptLogprobs = golden.numbers("prompt_logprobs");
    }

    @Test
    void generatePrintsTheGreedyContinuationAsIds() {
        int configEos = 2; // eos_token_id of llama-gqa's config.json
        assertFalse(
                Arrays.stream(greedyIds).anyMatch(id -> id == configEos),
                "golden ids must not contain EOS");
        CliRunner result =
                CliRunner.run(
                        "generate",
                        "--model",
                        dir.toString(),
                        "--prompt-ids",
                        TokenIds.join(promptIds),
                        "--max-new-tokens",
                        String.valueOf(greedyIds.length),
                        "--output",
                        "ids");
        assertEquals(0, result.exitCode, result.err);
        assertEquals(TokenIds.join(greedyIds), result.out.trim());
    }

    @Test
    void generateJsonReportsIdsAndLengthFinish() {
        CliRunner result =
                CliRunner.run(
                        "generate",
                        "--model",
                        dir.toString(),
                        "--prompt-ids",
                        TokenIds.join(promptIds),
                        "--max-new-tokens",
                        "6",
                        "--output",
                        "json");
        assertEquals(0, result.exitCode, result.err);
        JsonObject json = JsonParser.parseString(result.out).getAsJsonObject();
        assertEquals(
                TokenIds.join(Arrays.copyOf(greedyIds, 6)),
                TokenIds.join(GoldenCase.longs(json.getAsJsonArray("ids"))));
        assertEquals("length", json.get("finish_reason").getAsString());
        assertTrue(json.get("text").isJsonNull());
    }

    @Test
    void generateStopsOnAnyEosIdOfGenerationConfig(@TempDir Path copy) throws Exception {
        Files.copy(dir.resolve("config.json"), copy.resolve("config.json"));
        Files.copy(dir.resolve("model.safetensors"), copy.resolve("model.safetensors"));
        int stop = 5;
        long eos = greedyIds[stop];
        assertFalse(Arrays.stream(greedyIds, 0, stop).anyMatch(id -> id == eos));
        Files.writeString(
                copy.resolve("generation_config.json"), "{\"eos_token_id\": [511, " + eos + "]}");
        CliRunner result =
                CliRunner.run(
                        "generate",
                        "--model",
                        copy.toString(),
                        "--prompt-ids",
                        TokenIds.join(promptIds),
                        "--max-new-tokens",
                        String.valueOf(greedyIds.length),
                        "--output",
                        "json");
        assertEquals(0, result.exitCode, result.err);
        JsonObject json = JsonParser.parseString(result.out).getAsJsonObject();
        assertEquals(
                TokenIds.join(Arrays.copyOf(greedyIds, stop)),
                TokenIds.join(GoldenCase.longs(json.getAsJsonArray("ids"))));
        assertEquals("eos", json.get("finish_reason").getAsString());
    }

    @Test
    void scoreJsonGivesTheGoldenLogprobs() {
        CliRunner result =
                CliRunner.run(
                        "score",
                        "--model",
                        dir.toString(),
                        "--ids",
                        TokenIds.join(promptIds),
                        "--output",
                        "json");
        assertEquals(0, result.exitCode, result.err);
        JsonObject json = JsonParser.parseString(result.out).getAsJsonObject();
        JsonArray logprobs = json.getAsJsonArray("token_logprobs");
        assertEquals(promptIds.length, logprobs.size());
        assertTrue(logprobs.get(0).isJsonNull());
        double sum = 0;
        double printedUlp = 0;
        for (int i = 1; i < logprobs.size(); i++) {
            double lp = logprobs.get(i).getAsDouble();
            assertEquals(promptLogprobs[i - 1], lp, 1e-3);
            sum += lp;
            printedUlp = Math.max(printedUlp, Math.ulp((float) lp));
        }
        double perplexity = Math.exp(-sum / (promptIds.length - 1));
        // each float log-probability printed within half an ulp moves the mean, log(perplexity), by no more
        assertEquals(perplexity, json.get("perplexity").getAsDouble(), printedUlp * perplexity);
    }

    @Test
    void invalidGenerationConfigFailsWithOneErrorLineNamingFileAndField(@TempDir Path copy)
            throws Exception {
        Files.copy(dir.resolve("config.json"), copy.resolve("config.json"));
        Files.copy(dir.resolve("model.safetensors"), copy.resolve("model.safetensors"));
        Files.writeString(copy.resolve("generation_config.json"), "{\"top_p\": 2.0}");
        CliRunner result = CliRunner.run("generate", "--model", copy.toString(), "--prompt-ids", "1,2,3");
        assertEquals(1, result.exitCode);
        String line = result.err.trim();
        assertTrue(
                line.startsWith("error: ")
                        && line.contains("generation_config.json")
                        && line.contains("'top_p'"),
                line);
    }
}
