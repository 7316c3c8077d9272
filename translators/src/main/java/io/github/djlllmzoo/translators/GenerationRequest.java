package io.github.djlllmzoo.translators;

/**
 * One prompt to continue: text (needs the model's tokenizer) or token ids, how to generate, and
 * optionally a listener that receives the text as it is generated.
 *
 * @param prompt the prompt text, or {@code null} when {@code promptIds} is given
 * @param promptIds the prompt token ids, or {@code null} when {@code prompt} is given
 * @param config how to generate, or {@code null} for the model's defaults
 * @param listener receives tokens and text as they are generated, or {@code null}
 */
public record GenerationRequest(
        String prompt, long[] promptIds, GenerationConfig config, GenerationListener listener) {

    /**
     * Checks that exactly one of text and ids is given.
     *
     * @param prompt the prompt text, or {@code null} when {@code promptIds} is given
     * @param promptIds the prompt token ids, or {@code null} when {@code prompt} is given
     * @param config how to generate, or {@code null} for the model's defaults
     * @param listener receives tokens and text as they are generated, or {@code null}
     */
    public GenerationRequest {
        if ((prompt == null) == (promptIds == null)) {
            throw new IllegalArgumentException("give the prompt as text or as token ids (exactly one)");
        }
        if (promptIds != null) {
            promptIds = promptIds.clone();
        }
    }

    /**
     * @param prompt the prompt text
     * @return a request with the model's default config
     */
    public static GenerationRequest of(String prompt) {
        return new GenerationRequest(prompt, null, null, null);
    }

    /**
     * @param prompt the prompt text
     * @param config how to generate
     * @return the request
     */
    public static GenerationRequest of(String prompt, GenerationConfig config) {
        return new GenerationRequest(prompt, null, config, null);
    }

    /**
     * @param promptIds the prompt token ids
     * @param config how to generate, or {@code null} for the model's defaults
     * @return the request
     */
    public static GenerationRequest ofIds(long[] promptIds, GenerationConfig config) {
        return new GenerationRequest(null, promptIds, config, null);
    }

    /**
     * @param value receives tokens and text as they are generated
     * @return a copy of this request with the listener
     */
    public GenerationRequest withListener(GenerationListener value) {
        return new GenerationRequest(prompt, promptIds, config, value);
    }

    /** @return a copy of the prompt ids, or {@code null} */
    @Override
    public long[] promptIds() {
        return promptIds == null ? null : promptIds.clone();
    }
}
