package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code llmzoo generate --json-schema / --regex} on a random GPT-2 with GPT-2's tokenizer: output valid by construction. */
class GenerateConstrainedCliTest {

    @Test
    void generateConstrainsItsOutputToASchemaOrARegex(@TempDir Path dir) throws Exception {
        Path tokenizer = Fixtures.gpt2Tokenizer();
        Path model = dir.resolve("model");
        CliRunner init = CliRunner.run("init-random", "--shape", "gpt2-tiny", "--out", model.toString(),
                "--tokenizer", tokenizer.toString(), "--seed", "4");
        assertEquals(0, init.exitCode, init.err);

        CliRunner regex = CliRunner.run("generate", "--model", model.toString(), "--prompt", "Answer:",
                "--regex", "(yes|no), [0-9]{2}", "--do-sample", "--seed", "2", "--max-new-tokens", "20", "--output", "json");
        assertEquals(0, regex.exitCode, regex.err);
        JsonObject r = JsonParser.parseString(regex.out.trim()).getAsJsonObject();
        assertTrue(r.get("text").getAsString().matches("(yes|no), [0-9]{2}"), r.toString());

        Path schema = dir.resolve("schema.json");
        Files.writeString(schema, "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"},"
                + "\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":9}},\"required\":[\"ok\",\"n\"],"
                + "\"additionalProperties\":false}", StandardCharsets.UTF_8);
        CliRunner json = CliRunner.run("generate", "--model", model.toString(), "--prompt", "JSON:",
                "--json-schema", schema.toString(), "--max-new-tokens", "200");
        assertEquals(0, json.exitCode, json.err);
        JsonObject o = JsonParser.parseString(json.out.trim()).getAsJsonObject();
        assertEquals(Set.of("ok", "n"), o.keySet(), json.out);

        CliRunner both = CliRunner.run("generate", "--model", model.toString(), "--prompt", "x",
                "--json-object", "--regex", "a");
        assertTrue(both.exitCode != 0 && both.err.contains("at most one of"), both.err);
        Files.writeString(schema, "{\"type\":\"array\",\"uniqueItems\":true}", StandardCharsets.UTF_8);
        CliRunner bad = CliRunner.run("generate", "--model", model.toString(), "--prompt", "x", "--json-schema", schema.toString());
        assertTrue(bad.exitCode != 0 && bad.err.contains("uniqueItems"), bad.err);
    }
}
