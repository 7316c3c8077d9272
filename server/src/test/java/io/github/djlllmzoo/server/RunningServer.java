package io.github.djlllmzoo.server;

import io.github.djlllmzoo.benchmarks.RandomGpt2Checkpoint;
import io.github.djlllmzoo.chat.TemplateCheckpoints;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;

/**
 * A server on a loopback port over a random GPT-2 (GPT-2's real tokenizer, 32 wide, one layer),
 * optionally with a real family's chat template in its {@code tokenizer_config.json}; closing it
 * closes the server and the model.
 */
final class RunningServer implements AutoCloseable {

    final LocalModel model;
    final OpenAiServer server;

    private RunningServer(LocalModel model, OpenAiServer server) {
        this.model = model;
        this.server = server;
    }

    /** Writes the random GPT-2 checkpoint, skipping the test where the tokenizer fixture is absent. */
    static Path gpt2(Path dir, int window) throws Exception {
        return gpt2(dir, window, 7);
    }

    /** The random GPT-2 checkpoint of a given seed. */
    static Path gpt2(Path dir, int window, int seed) throws Exception {
        String fixtures = System.getProperty("llmzoo.fixtures");
        Path tokenizer = fixtures == null ? null : Paths.get(fixtures, "gpt2-tokenizer");
        Assumptions.assumeTrue(
                tokenizer != null && Files.isRegularFile(tokenizer.resolve("tokenizer.json")),
                "no GPT-2 tokenizer fixture at " + tokenizer);
        RandomGpt2Checkpoint.write(dir, tokenizer, 32, 1, 4, window, seed);
        return dir;
    }

    /** A copy of a checkpoint with a family's chat template added to its tokenizer_config.json. */
    static Path withTemplate(Path checkpoint, String family, Path out) throws Exception {
        return TemplateCheckpoints.withTemplate(checkpoint, family, out);
    }

    static RunningServer start(Path checkpoint) throws Exception {
        LocalModel model = LocalModel.load(checkpoint);
        try {
            return new RunningServer(
                    model,
                    OpenAiServer.start(
                            model,
                            ServerOptions.DEFAULTS
                                    .withAddress("127.0.0.1", 0)
                                    .withScheduling(8, 4, Duration.ofMillis(1))));
        } catch (Exception | Error e) {
            model.close();
            throw e;
        }
    }

    @Override
    public void close() {
        server.close();
        model.close();
    }
}
