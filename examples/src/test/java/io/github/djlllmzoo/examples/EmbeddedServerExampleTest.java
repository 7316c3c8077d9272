package io.github.djlllmzoo.examples;

import org.junit.jupiter.api.Test;

class EmbeddedServerExampleTest {

    @Test
    void theEmbeddedServerAnswersWithTheGreedyContinuationOfTheGenerator() throws Exception {
        ExampleRun.assertPrintsTheGreedyContinuation(EmbeddedServerExample::main, "The cat", 16);
    }
}
