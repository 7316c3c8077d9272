package io.github.djlllmzoo.examples;

import ai.djl.inference.Predictor;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;

/**
 * Text generation through DJL's model zoo: a {@link Criteria} names the checkpoint (a directory or
 * a Hugging Face id) and the generation settings, the zoo loads it, and a {@link Predictor} turns a
 * prompt into its continuation.
 *
 * <p>Run as {@code ZooPredictorExample MODEL [PROMPT]}; it prints the greedy continuation of at most
 * 20 tokens.
 */
public final class ZooPredictorExample {

    private ZooPredictorExample() {}

    /**
     * Loads the model and prints one continuation.
     *
     * @param args {@code MODEL [PROMPT]}
     * @throws Exception if the model cannot be loaded or run
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 2) {
            throw new IllegalArgumentException("usage: ZooPredictorExample MODEL [PROMPT]");
        }
        String prompt = args.length == 2 ? args[1] : "Once upon a time";
        Criteria<String, String> criteria =
                Criteria.builder()
                        .setTypes(String.class, String.class)
                        .optGroupId("io.github.djlllmzoo")
                        .optArtifactId("any")
                        .optArgument("model", args[0])
                        .optArgument("max_new_tokens", 20)
                        .optArgument("do_sample", false)
                        .build();
        try (ZooModel<String, String> model = criteria.loadModel();
                Predictor<String, String> predictor = model.newPredictor()) {
            System.out.println(predictor.predict(prompt));
        }
    }
}
