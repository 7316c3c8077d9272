package io.github.djlllmzoo.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/** Runs an example's {@code main} in this JVM and what the tests compare its output with. */
final class ExampleRun {

    /** An example's entry point. */
    interface Main {
        void run(String[] args) throws Exception;
    }

    private ExampleRun() {}

    /** The project's committed default model, found through the {@code llmzoo.home} property. */
    static Path defaultModel() {
        return Path.of(System.getProperty("llmzoo.home"), "models", "default");
    }

    /** Runs {@code main} and returns what it printed to standard output. */
    static synchronized String stdout(Main main, String... args) throws Exception {
        PrintStream original = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            main.run(args);
        } finally {
            System.setOut(original);
        }
        return printed.toString(StandardCharsets.UTF_8);
    }

    /**
     * The greedy continuation of {@code prompt} by the model's own generator, stopping at its EOS
     * tokens: what every example asks for in its own way.
     */
    static String greedyContinuation(Path dir, String prompt, int maxNewTokens) throws Exception {
        try (LocalModel model = LocalModel.load(dir)) {
            long[] ids = model.tokenizer().encode(prompt);
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(maxNewTokens).eosTokenIds(model.eosTokenIds()).build();
            return model.tokenizer().decodeContinuation(ids, model.generator().generateGreedy(ids, config).tokenIds());
        }
    }

    /**
     * Runs an example on the default model with {@code prompt} and asserts that it printed, as one
     * line, the generator's greedy continuation of at most {@code maxNewTokens} tokens.
     */
    static void assertPrintsTheGreedyContinuation(Main main, String prompt, int maxNewTokens) throws Exception {
        String expected = greedyContinuation(defaultModel(), prompt, maxNewTokens);

        String printed = stdout(main, defaultModel().toString(), prompt);

        assertFalse(expected.isBlank(), "the default model continues the prompt");
        assertEquals(expected + System.lineSeparator(), printed);
    }
}
