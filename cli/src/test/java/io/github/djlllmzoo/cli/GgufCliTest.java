package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.zoo.gguf.GgufType;
import io.github.djlllmzoo.zoo.gguf.GoldenGguf;
import io.github.djlllmzoo.zoo.gguf.LongRopePhi3;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --model FILE.gguf} scores as the checkpoint the file came from, and {@code convert} writes
 * that checkpoint back (safetensors, config.json, LongRoPE's rope_scaling included) so that it
 * scores the same again; a bad file is
 * one {@code error:} line naming it.
 */
class GgufCliTest {

    @TempDir Path tmp;

    private static String score(String model) {
        CliRunner run = CliRunner.run("score", "--model", model, "--ids", "1,5,9,200,33,7,41");
        assertEquals(0, run.exitCode, run.err);
        return run.out;
    }

    @Test
    void aGgufFileScoresAsItsCheckpointAndConvertsBackToIt() throws Exception {
        Path golden = GoldenCase.dir("llama-gqa");
        Path gguf = tmp.resolve("llama-gqa.gguf");
        GoldenGguf.write(golden, gguf, GgufType.F32);
        String expected = score(golden.toString());
        assertEquals(expected, score(gguf.toString()));

        Path out = tmp.resolve("converted");
        CliRunner convert = CliRunner.run("convert", "--model", gguf.toString(), "--out", out.toString());
        assertEquals(0, convert.exitCode, convert.err);
        assertTrue(Files.isRegularFile(out.resolve("model.safetensors")) && Files.isRegularFile(out.resolve("config.json")));
        assertEquals(expected, score(out.toString()));

        CliRunner again = CliRunner.run("convert", "--model", gguf.toString(), "--out", out.toString());
        assertEquals(2, again.exitCode, "an existing --out is a usage error");
    }

    @Test
    void aLongRopePhi3GgufConvertsToACheckpointWithLongRopeScalingThatScoresTheSame() throws Exception {
        Path checkpoint = LongRopePhi3.write(tmp.resolve("phi3-longrope"), 16);
        Path gguf = tmp.resolve("phi3-longrope.gguf");
        GoldenGguf.write(checkpoint, gguf, GgufType.F32);
        String expected = score(gguf.toString());
        Path out = tmp.resolve("converted");
        CliRunner convert = CliRunner.run("convert", "--model", gguf.toString(), "--out", out.toString());
        assertEquals(0, convert.exitCode, convert.err);
        JsonObject rope = JsonParser.parseString(Files.readString(out.resolve("config.json")))
                .getAsJsonObject().getAsJsonObject("rope_scaling");
        assertEquals("longrope", rope.get("rope_type").getAsString());
        assertEquals(16, rope.get("original_max_position_embeddings").getAsInt());
        assertEquals(8, rope.getAsJsonArray("long_factor").size());
        assertEquals(expected, score(out.toString()));
        // and the scaling matters: the same weights without it score otherwise
        assertFalse(expected.equals(score(LongRopePhi3.golden().toString())));
    }

    @Test
    void aCorruptGgufIsOneErrorLineNamingTheFile() throws Exception {
        Path bad = Files.write(tmp.resolve("bad.gguf"), new byte[] {'G', 'G', 'U', 'F', 3, 0, 0, 0, 1});
        CliRunner run = CliRunner.run("score", "--model", bad.toString(), "--ids", "1,2");
        assertEquals(1, run.exitCode);
        assertTrue(run.err.startsWith("error: ") && run.err.contains(bad.toString()) && run.err.contains("truncated"),
                run.err);
        assertFalse(run.err.contains("\tat "), "no stack trace");
    }
}
