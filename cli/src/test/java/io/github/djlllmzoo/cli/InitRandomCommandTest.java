package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.translators.GeneratedSequence;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.zoo.LocalModel;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code llmzoo init-random} writes a checkpoint that loads and generates like a downloaded one. */
class InitRandomCommandTest {

    @TempDir Path dir;

    @Test
    void writesAHuggingFaceLayoutCheckpointThatLoadsAndGenerates() throws Exception {
        CliRunner run = CliRunner.run("init-random", "--shape", "gpt2-tiny", "--out", dir.toString(), "--seed", "3");
        assertEquals(0, run.exitCode, run.err);
        DecoderConfig config = Configs.read(dir);
        assertEquals("gpt2", config.modelType());
        assertEquals(2, config.numLayers());
        try (SafeTensorsReader reader = SafeTensorsReader.open(dir.resolve("model.safetensors"))) {
            Set<String> names = reader.tensors().keySet();
            assertTrue(names.contains("wte.weight") && names.contains("h.1.mlp.c_proj.weight"), names.toString());
            assertFalse(names.stream().anyMatch(n -> n.startsWith("transformer.")),
                    "GPT-2's hub checkpoint names carry no prefix");
        }
        try (LocalModel model = LocalModel.load(dir)) {
            GeneratedSequence out =
                    model.generator().generateGreedy(new long[] {464, 2068, 7586}, GenerationConfig.builder()
                            .maxNewTokens(6).build());
            assertEquals(6, out.tokenIds().length);
        }
    }

    @Test
    void theSameSeedWritesTheSameWeights() throws Exception {
        Path a = dir.resolve("a");
        Path b = dir.resolve("b");
        assertEquals(0, CliRunner.run("init-random", "--shape", "gpt2-tiny", "--out", a.toString()).exitCode);
        assertEquals(0, CliRunner.run("init-random", "--shape", "gpt2-tiny", "--out", b.toString()).exitCode);
        assertEquals(-1L, Files.mismatch(a.resolve("model.safetensors"), b.resolve("model.safetensors")));
    }

    @Test
    void copiesTokenizerFilesWhenGivenADirectory() throws Exception {
        Path tokenizer = Files.createDirectories(dir.resolve("tok"));
        Files.writeString(tokenizer.resolve("tokenizer.json"), "{}");
        Files.writeString(tokenizer.resolve("config.json"), "not copied");
        Path out = dir.resolve("ckpt");
        CliRunner run = CliRunner.run("init-random", "--shape", "gpt2-tiny", "--out", out.toString(),
                "--tokenizer", tokenizer.toString());
        assertEquals(0, run.exitCode, run.err);
        assertEquals("{}", Files.readString(out.resolve("tokenizer.json")));
        assertTrue(Files.readString(out.resolve("config.json")).contains("\"model_type\":\"gpt2\""));
    }

    @Test
    void anUnknownShapeNamesTheKnownOnes() {
        CliRunner run = CliRunner.run("init-random", "--shape", "gpt5", "--out", dir.toString());
        assertEquals(1, run.exitCode);
        assertTrue(run.err.contains("gpt2-small") && run.err.contains("gpt5"), run.err);
    }
}
