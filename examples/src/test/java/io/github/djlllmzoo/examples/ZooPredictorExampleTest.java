package io.github.djlllmzoo.examples;

import org.junit.jupiter.api.Test;

class ZooPredictorExampleTest {

    @Test
    void thePredictorPrintsTheGreedyContinuationOfTheGenerator() throws Exception {
        ExampleRun.assertPrintsTheGreedyContinuation(ZooPredictorExample::main, "The little dog", 20);
    }
}
