package io.github.djlllmzoo.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import ai.djl.inference.Predictor;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import org.junit.jupiter.api.Test;

class LocalModelExampleTest {

    @Test
    void theLocalModelPrintsWhatTheZoosGreedyPredictorGenerates() throws Exception {
        String prompt = "Once upon a time";
        String expected;
        Criteria<String, String> criteria =
                Criteria.builder()
                        .setTypes(String.class, String.class)
                        .optGroupId("io.github.djlllmzoo")
                        .optArtifactId("any")
                        .optArgument("model", ExampleRun.defaultModel().toString())
                        .optArgument("max_new_tokens", 20)
                        .optArgument("do_sample", false)
                        .build();
        try (ZooModel<String, String> model = criteria.loadModel();
                Predictor<String, String> predictor = model.newPredictor()) {
            expected = predictor.predict(prompt);
        }

        String printed = ExampleRun.stdout(LocalModelExample::main, ExampleRun.defaultModel().toString(), prompt);

        assertFalse(expected.isBlank(), "the default model continues the prompt");
        assertEquals(expected + System.lineSeparator(), printed);
    }
}
