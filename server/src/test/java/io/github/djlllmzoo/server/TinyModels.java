package io.github.djlllmzoo.server;

import io.github.djlllmzoo.benchmarks.RandomGpt2Checkpoint;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Assumptions;

/** The random GPT-2 the serving tests run on: GPT-2's real tokenizer, 32 wide, one layer. */
final class TinyModels {

    private TinyModels() {}

    /**
     * Writes and loads the model, or skips the test when the tokenizer fixture is missing.
     *
     * @param dir where to write the checkpoint
     * @param window the context window
     * @return the loaded model
     */
    static LocalModel randomGpt2(Path dir, int window) throws Exception {
        String fixtures = System.getProperty("llmzoo.fixtures");
        Path tokenizer = fixtures == null ? null : Paths.get(fixtures, "gpt2-tokenizer");
        Assumptions.assumeTrue(
                tokenizer != null && Files.isRegularFile(tokenizer.resolve("tokenizer.json")),
                "no GPT-2 tokenizer fixture at " + tokenizer);
        RandomGpt2Checkpoint.write(dir, tokenizer, 32, 1, 4, window, 3);
        return LocalModel.load(dir);
    }
}
