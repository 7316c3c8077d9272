package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.StringJoiner;
import io.github.djlllmzoo.defaultmodel.ByteLevelBpeTrainer;
import io.github.djlllmzoo.defaultmodel.StoryCorpus;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code llmzoo generate} on the golden gpt2-tiny checkpoint. */
class GenerateCommandTest {

    private static Path golden;
    private static String promptIds;
    private static List<Long> greedyIds;

    @BeforeAll
    static void readGolden() throws IOException {
        GoldenCase gpt2 = GoldenCase.load("gpt2-tiny");
        golden = gpt2.dir();
        promptIds = gpt2.idList("prompt_ids");
        greedyIds = new ArrayList<>();
        for (long id : gpt2.ids("greedy_ids")) {
            greedyIds.add(id);
        }
    }

    /** The exit code, stdout and stderr of one run, and how often stdout was flushed. */
    private record Run(int code, String out, String err, int flushes) {}

    private static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int[] flushes = new int[1];
        PrintWriter counting =
                new PrintWriter(out) {
                    @Override
                    public void flush() {
                        flushes[0]++;
                        super.flush();
                    }
                };
        int code = LlmZoo.execute(args, counting, new PrintWriter(err));
        return new Run(code, out.toString(), err.toString(), flushes[0]);
    }

    private static List<String> lines(String text) {
        return Arrays.asList(text.strip().split("\\R"));
    }

    @Test
    void greedyIdsAreTheGoldenContinuation() {
        Run run =
                run("generate", "--model", golden.toString(), "--prompt-ids", promptIds, "--greedy",
                        "--max-new-tokens", String.valueOf(greedyIds.size()), "--output", "ids");
        assertEquals(0, run.code(), run.err());
        StringJoiner expected = new StringJoiner(",");
        greedyIds.forEach(id -> expected.add(id.toString()));
        assertEquals(expected.toString(), run.out().strip());
    }

    @Test
    void theCheckpointsMaxNewTokensIsTheDefaultAndMaxNewTokensOverridesIt(@TempDir Path dir) throws IOException {
        Files.copy(golden.resolve("config.json"), dir.resolve("config.json"));
        Files.copy(golden.resolve("model.safetensors"), dir.resolve("model.safetensors"));
        int fromFile = greedyIds.size() / 2;
        Files.writeString(dir.resolve("generation_config.json"), "{\"max_new_tokens\": " + fromFile + "}");
        String[] common = {"generate", "--model", dir.toString(), "--prompt-ids", promptIds, "--output", "ids"};
        Run byFile = run(common);
        assertEquals(0, byFile.code(), byFile.err());
        assertEquals(join(greedyIds.subList(0, fromFile)), byFile.out().strip());
        List<String> withOption = new ArrayList<>(Arrays.asList(common));
        withOption.addAll(List.of("--max-new-tokens", "3"));
        Run byOption = run(withOption.toArray(new String[0]));
        assertEquals(join(greedyIds.subList(0, 3)), byOption.out().strip());
    }

    private static String join(List<Long> ids) {
        StringJoiner out = new StringJoiner(",");
        ids.forEach(id -> out.add(id.toString()));
        return out.toString();
    }

    @Test
    void severalSeededSequencesPrintOneJsonObjectPerLineTheSameOnEveryRun() {
        String[] args = {
            "generate", "--model", golden.toString(), "--prompt-ids", promptIds, "--max-new-tokens", "6",
            "--num-return-sequences", "3", "--seed", "7", "--temperature", "1.2", "--top-k", "40", "--output", "json"
        };
        Run first = run(args);
        assertEquals(0, first.code(), first.err());
        List<String> lines = lines(first.out());
        assertEquals(3, lines.size());
        for (String line : lines) {
            JsonObject json = JsonParser.parseString(line).getAsJsonObject();
            assertTrue(json.getAsJsonArray("ids").size() <= 6);
            assertTrue(json.get("text").isJsonNull(), "no tokenizer, no text");
            assertTrue(List.of("length", "eos").contains(json.get("finish_reason").getAsString()));
        }
        assertEquals(first.out(), run(args).out());
    }

    @Test
    void contradictoryOrInvalidOptionsAreUsageErrorsNamingTheOption() {
        Run greedyAndTopK =
                run("generate", "--model", golden.toString(), "--prompt-ids", promptIds, "--greedy", "--top-k", "3");
        assertEquals(2, greedyAndTopK.code());
        assertTrue(greedyAndTopK.err().contains("--greedy"), greedyAndTopK.err());
        Run badTopP = run("generate", "--model", golden.toString(), "--prompt-ids", promptIds, "--top-p", "1.5");
        assertEquals(2, badTopP.code());
        assertTrue(badTopP.err().contains("top_p"), badTopP.err());
        Run streamJson =
                run("generate", "--model", golden.toString(), "--prompt-ids", promptIds, "--stream", "--output", "json");
        assertEquals(2, streamJson.code());
    }

    /**
     * The golden weights with a 512-token byte-level BPE tokenizer trained by the project's own
     * trainer, so every id the model can produce decodes to text.
     */
    private static Path withTokenizer(Path dir) throws IOException {
        Files.copy(golden.resolve("config.json"), dir.resolve("config.json"));
        Files.copy(golden.resolve("model.safetensors"), dir.resolve("model.safetensors"));
        ByteLevelBpeTrainer.builder()
                .vocabSize(512)
                .addBosToken(false)
                .build()
                .train(List.of(new StoryCorpus(1).generate(200)))
                .save(dir);
        return dir;
    }

    @Test
    void streamedTextEqualsTheTextPrintedAtTheEnd(@TempDir Path dir) throws IOException {
        String model = withTokenizer(dir).toString();
        String[] common = {
            "generate", "--model", model, "--prompt-ids", promptIds, "--max-new-tokens", "16", "--seed", "3",
            "--temperature", "1.5"
        };
        Run plain = run(common);
        List<String> streamedArgs = new ArrayList<>(Arrays.asList(common));
        streamedArgs.add("--stream");
        Run streamed = run(streamedArgs.toArray(new String[0]));
        assertEquals(0, streamed.code(), streamed.err());
        assertEquals(plain.out(), streamed.out());
        assertTrue(streamed.flushes() > 2, "flushed per piece, not once at the end");
        assertFalse(plain.out().isBlank());
    }

    @Test
    void aStopStringEndsThePrintedTextBeforeIt(@TempDir Path dir) throws IOException {
        String model = withTokenizer(dir).toString();
        String[] common = {"generate", "--model", model, "--prompt-ids", promptIds, "--max-new-tokens", "24"};
        String text = run(common).out();
        text = text.substring(0, text.length() - System.lineSeparator().length());
        int at = text.length() / 2;
        while (at < text.length() - 1 && (text.substring(at, at + 2).contains("\uFFFD") || text.substring(at, at + 2).isBlank())) {
            at++;
        }
        String stop = text.substring(at, at + 2);
        List<String> args = new ArrayList<>(Arrays.asList(common));
        args.addAll(List.of("--stop", stop, "--stop", "never appears", "--output", "json"));
        Run stopped = run(args.toArray(new String[0]));
        assertEquals(0, stopped.code(), stopped.err());
        JsonObject json = JsonParser.parseString(stopped.out()).getAsJsonObject();
        assertEquals(text.substring(0, text.indexOf(stop)), json.get("text").getAsString());
        assertEquals("stop", json.get("finish_reason").getAsString());
    }
}
