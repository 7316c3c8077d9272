package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Drives {@code llmzoo bench-constrained} on a tiny random GPT-2 shape (figures checked for sense, never for speed). */
class BenchConstrainedCommandTest {

    @Test
    void reportsStepTimesWithAndWithoutTheSchemaAndCompileTimes(@TempDir Path dir) throws Exception {
        Path tokenizer = Fixtures.gpt2Tokenizer();
        Path schema = dir.resolve("schema.json");
        Files.writeString(schema, "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]}",
                StandardCharsets.UTF_8);
        Path other = dir.resolve("other.json");
        Files.writeString(other, "[{\"name\":\"a\",\"schema\":{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]},\"maxItems\":3}},"
                + "{\"type\":\"boolean\"}]", StandardCharsets.UTF_8);
        CliRunner run = CliRunner.run("bench-constrained", "--shape", "gpt2-tiny", "--tokenizer", tokenizer.toString(),
                "--json-schema", schema.toString(), other.toString(), "--batch", "1,2", "--steps", "6",
                "--prompt-tokens", "4", "--output", "json");
        assertEquals(0, run.exitCode, run.err);
        JsonObject r = JsonParser.parseString(run.out).getAsJsonObject();
        assertEquals(3, r.get("schemas").getAsInt(), "one schema, then a list of two");
        assertTrue(r.get("compile_ms_median").getAsDouble() > 0);
        assertEquals(2, r.getAsJsonArray("decode").size());
        for (var e : r.getAsJsonArray("decode")) {
            JsonObject d = e.getAsJsonObject();
            assertTrue(d.get("constrained_step_ms_median").getAsDouble() > 0);
            assertTrue(d.get("unconstrained_step_ms_median").getAsDouble() > 0);
        }
        CliRunner text = CliRunner.run("bench-constrained", "--shape", "gpt2-tiny", "--tokenizer", tokenizer.toString(),
                "--json-schema", schema.toString(), "--batch", "1", "--steps", "2", "--prompt-tokens", "4");
        assertEquals(0, text.exitCode, text.err);
        assertTrue(text.out.contains("compile") && text.out.contains("constrained (x"), text.out);
        CliRunner bad = CliRunner.run("bench-constrained", "--shape", "gpt2-tiny", "--json-schema", schema.toString());
        assertTrue(bad.exitCode != 0 && bad.err.contains("--tokenizer"), bad.err);
    }
}
