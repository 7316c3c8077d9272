package io.github.djlllmzoo.translators;

/**
 * One prompt to continue: text (needs the model's tokenizer) or token ids, how to generate,
 * optionally a listener that receives the text as it is generated, and optionally the LoRA adapter
 * to compute with. Requests for different adapters (and for none) generate in one {@code
 * Predictor.batchPredict}, each row with its own adapter ({@link
 * io.github.djlllmzoo.blocks.LoraAdapter#selectRows}).
 *
 * @param prompt the prompt text, or {@code null} when {@code promptIds} is given
 * @param promptIds the prompt token ids, or {@code null} when {@code prompt} is given
 * @param config how to generate, or {@code null} for the model's defaults
 * @param listener receives tokens and text as they are generated, or {@code null}
 * @param adapter the name of a LoRA adapter attached to the model to compute with, or {@code null}
 *     for the one the calling thread selected ({@link
 *     io.github.djlllmzoo.blocks.LoraAdapter#selected()}: the model as loaded unless told otherwise)
 */
public record GenerationRequest(
        String prompt, long[] promptIds, GenerationConfig config, GenerationListener listener, String adapter) {

    /**
     * Checks that exactly one of text and ids is given.
     *
     * @param prompt the prompt text, or {@code null} when {@code promptIds} is given
     * @param promptIds the prompt token ids, or {@code null} when {@code prompt} is given
     * @param config how to generate, or {@code null} for the model's defaults
     * @param listener receives tokens and text as they are generated, or {@code null}
     * @param adapter the name of a LoRA adapter attached to the model, or {@code null} for the
     *     calling thread's selection
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
     * A request that computes with the calling thread's adapter selection.
     *
     * @param prompt the prompt text, or {@code null} when {@code promptIds} is given
     * @param promptIds the prompt token ids, or {@code null} when {@code prompt} is given
     * @param config how to generate, or {@code null} for the model's defaults
     * @param listener receives tokens and text as they are generated, or {@code null}
     */
    public GenerationRequest(String prompt, long[] promptIds, GenerationConfig config, GenerationListener listener) {
        this(prompt, promptIds, config, listener, null);
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
        return new GenerationRequest(prompt, promptIds, config, value, adapter);
    }

    /**
     * @param name the name a LoRA adapter is attached to the model under ({@code
     *     LocalModel.attachAdapter}), or {@code null} for the calling thread's selection
     * @return a copy of this request that computes with that adapter
     */
    public GenerationRequest withAdapter(String name) {
        return new GenerationRequest(prompt, promptIds, config, listener, name);
    }

    /** @return a copy of the prompt ids, or {@code null} */
    @Override
    public long[] promptIds() {
        return promptIds == null ? null : promptIds.clone();
    }
}
