package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Drives {@code llmzoo finetune} on a tiny GPT-2 trained from scratch with a word-level tokenizer. */
class FineTuneCliTest {

    @TempDir Path temp;
    private Path model;
    private Path text;

    @BeforeEach
    void setUp() throws Exception {
        model = TinyWordModel.write(temp.resolve("model"));
        text = TinyWordModel.text(temp.resolve("train.txt"), 600);
    }

    private CliRunner finetune(String... extra) {
        String[] base = {"finetune", "--data", text.toString(), "--batch", "2", "--seq-len", "8", "--lr", "3e-3",
            "--log-every", "1", "--output", "json"};
        String[] args = new String[base.length + extra.length];
        System.arraycopy(base, 0, args, 0, base.length);
        System.arraycopy(extra, 0, args, base.length, extra.length);
        return CliRunner.run(args);
    }

    @Test
    void fineTuningWritesACheckpointThatGenerateLoads() throws Exception {
        Path out = temp.resolve("out");
        CliRunner run =
                finetune("--model", model.toString(), "--from-scratch", "--steps", "4", "--eval-every", "2",
                        "--save-every", "2", "--out", out.toString());
        assertEquals(0, run.exitCode, run.err);
        JsonObject summary = JsonParser.parseString(run.out).getAsJsonObject();
        assertEquals(4, summary.get("step").getAsInt());
        assertTrue(summary.get("eval_perplexity_after").getAsDouble() > 0);
        assertTrue(run.err.contains("step 4/4  loss") && run.err.contains("eval_ppl") && run.err.contains("tokens/s"), run.err);
        assertTrue(Files.readString(out.resolve("trainer_state.json")).contains("\"global_step\": 4"));

        CliRunner generate =
                CliRunner.run("generate", "--model", out.toString(), "--prompt", "the cat", "--max-new-tokens", "3", "--output", "ids");
        assertEquals(0, generate.exitCode, generate.err);
    }

    @Test
    void resumeContinuesInPlaceFromTheSavedStep() throws Exception {
        Path out = temp.resolve("out");
        assertEquals(0, finetune("--model", model.toString(), "--from-scratch", "--steps", "2", "--out", out.toString()).exitCode);
        CliRunner resumed = finetune("--resume", out.toString(), "--steps", "4", "--out", out.toString());
        assertEquals(0, resumed.exitCode, resumed.err);
        JsonObject summary = JsonParser.parseString(resumed.out).getAsJsonObject();
        assertEquals(2, summary.get("start_step").getAsInt());
        assertEquals(4, summary.get("step").getAsInt());
        assertTrue(resumed.err.contains("resuming at step 2 with the AdamW moments"), resumed.err);
    }

    @Test
    void anExistingOutputDirectoryIsRefusedUnlessItIsTheResumedOne() throws Exception {
        Path out = Files.createDirectories(temp.resolve("taken"));
        Files.writeString(out.resolve("keep.txt"), "mine");
        CliRunner run = finetune("--model", model.toString(), "--from-scratch", "--steps", "1", "--out", out.toString());
        assertEquals(2, run.exitCode);
        assertTrue(run.err.contains("already exists") && run.err.contains("--resume"), run.err);
        assertEquals("mine", Files.readString(out.resolve("keep.txt")));
    }

    @Test
    void jsonlTrainsOnCompletionsAndBadLinesFailWithoutLeavingOutput() throws Exception {
        Path pairs =
                Files.writeString(
                        temp.resolve("pairs.jsonl"),
                        "{\"prompt\": \"the cat\", \"completion\": \"sat on the mat .\"}\n".repeat(6)
                                + "{\"prompt\": \"the dog\", \"completion\": \"ran on the rug .\"}\n".repeat(6));
        Path good = temp.resolve("good");
        CliRunner run =
                CliRunner.run("finetune", "--model", model.toString(), "--from-scratch", "--data", pairs.toString(),
                        "--format", "jsonl", "--steps", "3", "--batch", "2", "--eval-split", "0.25", "--out", good.toString());
        assertEquals(0, run.exitCode, run.err);
        assertTrue(Files.isRegularFile(good.resolve("model.safetensors")));

        Path bad = Files.writeString(temp.resolve("bad.jsonl"), "{\"prompt\": \"the\", \"completion\": \"cat\"}\n{\"prompt\": 3}\n");
        Path out = temp.resolve("never");
        CliRunner failed =
                CliRunner.run("finetune", "--model", model.toString(), "--from-scratch", "--data", bad.toString(),
                        "--format", "jsonl", "--out", out.toString());
        assertEquals(1, failed.exitCode);
        assertTrue(failed.err.contains("bad.jsonl:2"), failed.err);
        assertFalse(Files.exists(out));
        try (Stream<Path> entries = Files.list(temp)) {
            assertTrue(entries.noneMatch(p -> p.getFileName().toString().startsWith(".")), "no temporary directory is left");
        }
    }
}
