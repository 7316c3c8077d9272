package io.github.djlllmzoo.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The llmzoo-spark command line, end to end on local[2]. */
class LlmZooSparkTest {

    private static final String MODEL = Path.of(System.getProperty("llmzoo.home"), "models", "default").toAbsolutePath().toString();

    @Test
    void generateWritesEveryInputRowWithItsOutputsAsJsonLines(@TempDir Path dir) throws Exception {
        Path input = dir.resolve("prompts.jsonl");
        Files.writeString(input, "{\"id\": 1, \"prompt\": \"Once upon a time\"}\n{\"id\": 2, \"prompt\": \"\"}\n"
                + "{\"id\": 3, \"prompt\": \"The little dog\"}\n");
        Path output = dir.resolve("out");
        StringWriter err = new StringWriter();
        int code = LlmZooSpark.execute(new String[] {
            "generate", "--master", "local[2]", "--model", MODEL, "--input", input.toString(), "--output", output.toString(),
            "--format", "jsonl", "--greedy", "--max-new-tokens", "4", "--batch-size", "2", "--partitions", "2"
        }, new PrintWriter(new StringWriter()), new PrintWriter(err));
        assertEquals(0, code, err.toString());

        List<JsonObject> rows = readJsonLines(output);
        assertEquals(3, rows.size());
        try (Stream<Path> files = Files.list(output)) {
            assertEquals(2, files.filter(f -> f.getFileName().toString().endsWith(".json")).count(), "one file per partition");
        }
        for (JsonObject row : rows) {
            assertTrue(row.has("prompt") && row.has("text") && row.has("finish_reason") && row.has("error"), row.toString());
            if (row.get("id").getAsInt() == 2) {
                assertEquals("the prompt is empty", row.get("error").getAsString());
            } else {
                assertTrue(row.get("error").isJsonNull(), row.toString());
                assertEquals(4, row.get("completion_tokens").getAsInt());
            }
        }
    }

    @Test
    void inputColNamesTheColumnOfChatMessages(@TempDir Path dir) throws Exception {
        Path input = dir.resolve("chats.jsonl");
        Files.writeString(input, "{\"id\": 1, \"messages\": [{\"role\": \"user\", \"content\": \"Tell me about a dog\"}]}\n");
        Path output = dir.resolve("out");
        StringWriter err = new StringWriter();
        int code = LlmZooSpark.execute(new String[] {
            "generate", "--master", "local[1]", "--model", MODEL, "--input", input.toString(), "--output", output.toString(),
            "--format", "jsonl", "--greedy", "--max-new-tokens", "3", "--input-col", "messages"
        }, new PrintWriter(new StringWriter()), new PrintWriter(err));
        assertEquals(0, code, err.toString());
        List<JsonObject> rows = readJsonLines(output);
        assertEquals(1, rows.size());
        assertTrue(rows.get(0).get("error").isJsonNull(), rows.toString());
        assertEquals(3, rows.get(0).get("completion_tokens").getAsInt());
    }

    private static List<JsonObject> readJsonLines(Path output) throws Exception {
        List<JsonObject> rows = new ArrayList<>();
        try (Stream<Path> files = Files.list(output)) {
            for (Path file : files.filter(f -> f.getFileName().toString().endsWith(".json")).toList()) {
                for (String line : Files.readAllLines(file)) {
                    rows.add(JsonParser.parseString(line).getAsJsonObject());
                }
            }
        }
        return rows;
    }

    @Test
    void anInputOfUnknownFormatIsAUsageError(@TempDir Path dir) {
        StringWriter err = new StringWriter();
        int code = LlmZooSpark.execute(new String[] {
            "score", "--model", MODEL, "--input", dir.resolve("rows.txt").toString(), "--output", dir.resolve("out").toString()
        }, new PrintWriter(new StringWriter()), new PrintWriter(err));
        assertEquals(2, code);
        assertTrue(err.toString().contains("--input " + dir.resolve("rows.txt") + ": name it .jsonl, .json, .csv or .parquet"), err.toString());
        assertFalse(Files.exists(dir.resolve("out")));
    }
}
