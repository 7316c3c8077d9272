package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import org.junit.jupiter.api.Test;

/** Drives {@code llmzoo bench-adapters} on a tiny random GPT-2 shape (figures checked for sense, never for speed). */
class BenchAdaptersCommandTest {

    @Test
    void reportsBaseMixedAndSingleAdapterThroughput() {
        CliRunner run = CliRunner.run("bench-adapters", "--shape", "gpt2-tiny", "--batch", "3", "--adapters", "2",
                "--rank", "2", "--steps", "3", "--rounds", "1", "--prompt-tokens", "4", "--output", "json");
        assertEquals(0, run.exitCode, run.err);
        JsonObject r = JsonParser.parseString(run.out).getAsJsonObject();
        assertEquals("[bench-adapter-0, bench-adapter-1, null]", r.get("mixed_rows").getAsString());
        for (String key : new String[] {"base", "mixed", "single_adapter"}) {
            assertTrue(r.get(key + "_tokens_per_s").getAsDouble() > 0, key);
        }
        double ratio = r.get("mixed_tokens_per_s").getAsDouble() / r.get("base_tokens_per_s").getAsDouble();
        assertEquals(ratio, r.get("mixed_over_base").getAsDouble(), 1e-9 * ratio);
        CliRunner text = CliRunner.run("bench-adapters", "--shape", "gpt2-tiny", "--batch", "2", "--adapters", "1",
                "--steps", "2", "--rounds", "1", "--prompt-tokens", "4");
        assertEquals(0, text.exitCode, text.err);
        assertTrue(text.out.contains("mixed") && text.out.contains("of base"), text.out);
        CliRunner bad = CliRunner.run("bench-adapters", "--shape", "gpt2-tiny", "--rank", "0");
        assertTrue(bad.exitCode != 0 && bad.err.contains("--rank"), bad.err);
    }
}
