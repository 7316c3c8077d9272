package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Drives LoRA through the command line: finetune --lora-*, resume, --adapter, merge-adapter. */
class LoraCliTest {

    private static final String IDS = "2,3,5,7,2,8,10,2,4,6";
    /**
     * The bound on the logits of base + adapter against the merged checkpoint; a
     * log-probability (a logit less the log-sum-exp of all) moves by at most twice that.
     */
    private static final double LOGPROB_TOLERANCE = 2e-4;

    @TempDir Path temp;
    private Path base;
    private Path text;

    @BeforeEach
    void setUp() throws Exception {
        Path model = TinyWordModel.write(temp.resolve("model"));
        text = TinyWordModel.text(temp.resolve("train.txt"), 400);
        base = temp.resolve("base");
        CliRunner run = finetune("--model", model.toString(), "--from-scratch", "--steps", "2", "--out", base.toString());
        assertEquals(0, run.exitCode, run.err);
    }

    private CliRunner finetune(String... extra) {
        String[] common = {"finetune", "--data", text.toString(), "--batch", "2", "--seq-len", "8", "--lr", "3e-2",
            "--log-every", "2", "--eval-every", "0", "--output", "json"};
        String[] args = new String[common.length + extra.length];
        System.arraycopy(common, 0, args, 0, common.length);
        System.arraycopy(extra, 0, args, common.length, extra.length);
        return CliRunner.run(args);
    }

    @Test
    void anAdapterTrainsResumesAndComputesWhatItsMergedCheckpointComputes() throws Exception {
        Path adapter = temp.resolve("adapter");
        CliRunner train = finetune("--model", base.toString(), "--lora-rank", "4", "--lora-alpha", "8",
                "--lora-targets", "c_attn,c_proj,c_fc", "--steps", "4", "--save-every", "2", "--out", adapter.toString());
        assertEquals(0, train.exitCode, train.err);
        JsonObject config = JsonParser.parseString(Files.readString(adapter.resolve("adapter_config.json"))).getAsJsonObject();
        assertEquals(4, config.get("r").getAsInt());
        assertEquals(8f, config.get("lora_alpha").getAsFloat());
        assertTrue(config.get("fan_in_fan_out").getAsBoolean());
        assertEquals(base.toAbsolutePath().normalize().toString(), config.get("base_model_name_or_path").getAsString());
        assertTrue(Files.exists(adapter.resolve("adapter_model.safetensors")));
        assertFalse(Files.exists(adapter.resolve("model.safetensors")));

        CliRunner resume = finetune("--resume", adapter.toString(), "--steps", "6", "--out", adapter.toString());
        assertEquals(0, resume.exitCode, resume.err);
        assertEquals(6, JsonParser.parseString(resume.out).getAsJsonObject().get("step").getAsInt());
        assertTrue(resume.err.contains("resuming at step 4 with the AdamW moments"), resume.err);

        Path merged = temp.resolve("merged");
        CliRunner merge = CliRunner.run("merge-adapter", "--model", base.toString(), "--adapter", adapter.toString(),
                "--out", merged.toString());
        assertEquals(0, merge.exitCode, merge.err);
        assertTrue(merge.out.contains("merged into 8 projections"), merge.out);

        double[] withAdapter = logprobs("--model", base.toString(), "--adapter", adapter.toString());
        double[] fromMerged = logprobs("--model", merged.toString());
        double[] baseAlone = logprobs("--model", base.toString());
        double moved = 0;
        for (int i = 1; i < withAdapter.length; i++) {
            assertEquals(fromMerged[i], withAdapter[i], LOGPROB_TOLERANCE, "token " + i);
            moved = Math.max(moved, Math.abs(baseAlone[i] - withAdapter[i]));
        }
        assertTrue(moved > 100 * LOGPROB_TOLERANCE, "the adapter changes the scores: " + moved);

        CliRunner generate = CliRunner.run("generate", "--model", base.toString(), "--adapter", adapter.toString(),
                "--prompt", "the cat", "--max-new-tokens", "3", "--output", "ids");
        assertEquals(0, generate.exitCode, generate.err);
    }

    @Test
    void loraOptionsThatCannotApplyAreUsageErrors() {
        CliRunner scratch = finetune("--model", base.toString(), "--from-scratch", "--lora-rank", "4",
                "--out", temp.resolve("a").toString());
        assertEquals(2, scratch.exitCode);
        assertTrue(scratch.err.contains("--from-scratch"), scratch.err);
        CliRunner targets = finetune("--model", base.toString(), "--lora-rank", "4", "--lora-targets", "q_proj",
                "--out", temp.resolve("b").toString());
        assertEquals(2, targets.exitCode);
        assertTrue(targets.err.contains("[q_proj]") && targets.err.contains("c_attn"), targets.err);
        CliRunner noRank = finetune("--model", base.toString(), "--lora-alpha", "4", "--out", temp.resolve("c").toString());
        assertEquals(2, noRank.exitCode);
        assertTrue(noRank.err.contains("need --lora-rank"), noRank.err);
        CliRunner two = CliRunner.run("score", "--model", base.toString(), "--adapter", "x=" + base,
                "--adapter", "y=" + base, "--ids", IDS);
        assertEquals(1, two.exitCode);
        assertTrue(two.err.startsWith("error: ") && two.err.contains("one adapter"), two.err);
    }

    private static double[] logprobs(String... model) {
        String[] args = new String[model.length + 5];
        args[0] = "score";
        System.arraycopy(model, 0, args, 1, model.length);
        System.arraycopy(new String[] {"--ids", IDS, "--output", "json"}, 0, args, model.length + 1, 4);
        CliRunner run = CliRunner.run(args);
        assertEquals(0, run.exitCode, run.err);
        JsonArray values = JsonParser.parseString(run.out).getAsJsonObject().getAsJsonArray("token_logprobs");
        double[] out = new double[values.size()];
        for (int i = 1; i < out.length; i++) {
            out[i] = values.get(i).getAsDouble();
        }
        return out;
    }
}
