package io.github.djlllmzoo.examples;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

class ExampleUsageTest {

    @Test
    void everyExampleRunWithoutArgumentsSaysHowToRunIt() {
        Map<String, ExampleRun.Main> examples =
                Map.of(
                        "ZooPredictorExample", ZooPredictorExample::main,
                        "LocalModelExample", LocalModelExample::main,
                        "FineTuningExample", FineTuningExample::main,
                        "EmbeddedServerExample", EmbeddedServerExample::main);
        examples.forEach(
                (name, main) -> {
                    IllegalArgumentException e =
                            assertThrows(IllegalArgumentException.class, () -> main.run(new String[0]), name);
                    assertTrue(e.getMessage().startsWith("usage: " + name + " "), e.getMessage());
                });
    }
}
