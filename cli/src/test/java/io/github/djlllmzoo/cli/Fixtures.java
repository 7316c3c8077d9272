package io.github.djlllmzoo.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Assumptions;

/** The shared test fixtures of {@code ../shared/fixtures}. */
final class Fixtures {

    private Fixtures() {}

    /** @return the real GPT-2 tokenizer directory; skips the test when the fixtures are absent */
    static Path gpt2Tokenizer() {
        String fixtures = System.getProperty("llmzoo.fixtures");
        Path tokenizer = fixtures == null ? null : Paths.get(fixtures, "gpt2-tokenizer");
        Assumptions.assumeTrue(tokenizer != null && Files.isDirectory(tokenizer), "no GPT-2 tokenizer fixture");
        return tokenizer;
    }
}
