package io.github.djlllmzoo.translators;

import ai.djl.ndarray.NDList;
import ai.djl.translate.Batchifier;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorContext;
import java.util.ArrayList;
import java.util.List;

/**
 * The simple case, {@code Predictor<String, String>}: a prompt in, the generated text out, with
 * the model's default {@link GenerationConfig}. Runs through a {@link GenerationTranslator}.
 */
public final class TextGenerationTranslator implements Translator<String, String> {

    private final GenerationTranslator generation;

    /**
     * @param generation the full translator, which must have a tokenizer
     * @throws IllegalArgumentException if it has none
     */
    public TextGenerationTranslator(GenerationTranslator generation) {
        if (generation.tokenizer() == null) {
            throw new IllegalArgumentException(
                    "text in, text out needs the model's tokenizer"
                            + " (tokenizer.json, or vocab.json and merges.txt)");
        }
        this.generation = generation;
    }

    @Override
    public Batchifier getBatchifier() {
        return generation.getBatchifier();
    }

    @Override
    public NDList processInput(TranslatorContext ctx, String input) {
        return generation.processInput(ctx, GenerationRequest.of(input));
    }

    @Override
    public String processOutput(TranslatorContext ctx, NDList list) {
        return generation.processOutput(ctx, list).text();
    }

    @Override
    public NDList batchProcessInput(TranslatorContext ctx, List<String> inputs) {
        List<GenerationRequest> requests = new ArrayList<>(inputs.size());
        for (String input : inputs) {
            requests.add(GenerationRequest.of(input));
        }
        return generation.batchProcessInput(ctx, requests);
    }

    @Override
    public List<String> batchProcessOutput(TranslatorContext ctx, NDList list) {
        List<String> out = new ArrayList<>();
        for (GenerationResult result : generation.batchProcessOutput(ctx, list)) {
            out.add(result.text());
        }
        return out;
    }
}
