package io.github.djlllmzoo.zoo;

import java.util.List;
import java.util.Optional;

/**
 * A model of the registry: a short name users type, the Hugging Face repository it comes from,
 * and what it is.
 *
 * @param name the registry name, e.g. "gpt2"
 * @param hubId the Hugging Face repository id, e.g. "openai-community/gpt2"
 * @param family the architecture, its {@code model_type}: "gpt2", "llama", "mistral", "qwen2", "qwen3",
 *     "phi3", "gemma2" or "gemma3_text"
 * @param parameters a human-readable size, e.g. "124M"
 * @param note licence or access notes (e.g. gated), or an empty string
 */
public record KnownModel(String name, String hubId, String family, String parameters, String note) {

    private static final String GEMMA_TERMS = "gated: accept Google's Gemma terms on the hub and set HF_TOKEN";

    /** Every model the registry lists, in the order {@code llmzoo models} prints them. */
    public static final List<KnownModel> ALL =
            List.of(
                    new KnownModel("gpt2", "openai-community/gpt2", "gpt2", "124M", "MIT"),
                    new KnownModel("gpt2-medium", "openai-community/gpt2-medium", "gpt2", "355M", "MIT"),
                    new KnownModel("gpt2-large", "openai-community/gpt2-large", "gpt2", "774M", "MIT"),
                    new KnownModel("gpt2-xl", "openai-community/gpt2-xl", "gpt2", "1.5B", "MIT"),
                    new KnownModel("distilgpt2", "distilbert/distilgpt2", "gpt2", "82M", "Apache-2.0"),
                    new KnownModel(
                            "TinyLlama-1.1B", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "llama", "1.1B", "Apache-2.0"),
                    new KnownModel("SmolLM2-135M", "HuggingFaceTB/SmolLM2-135M", "llama", "135M", "Apache-2.0"),
                    new KnownModel("SmolLM2-360M", "HuggingFaceTB/SmolLM2-360M", "llama", "360M", "Apache-2.0"),
                    new KnownModel(
                            "Llama-3.2-1B",
                            "meta-llama/Llama-3.2-1B",
                            "llama",
                            "1.2B",
                            "gated: accept Meta's licence on the hub and set HF_TOKEN"),
                    new KnownModel(
                            "Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct", "qwen2", "494M", "Apache-2.0"),
                    new KnownModel(
                            "Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "qwen2", "1.5B", "Apache-2.0"),
                    new KnownModel("Qwen3-0.6B", "Qwen/Qwen3-0.6B", "qwen3", "0.6B", "Apache-2.0"),
                    new KnownModel("Qwen3-1.7B", "Qwen/Qwen3-1.7B", "qwen3", "1.7B", "Apache-2.0"),
                    new KnownModel(
                            "Phi-3-mini-4k-instruct",
                            "microsoft/Phi-3-mini-4k-instruct",
                            "phi3",
                            "3.8B",
                            "MIT"),
                    new KnownModel(
                            "gemma-2-2b-it", "google/gemma-2-2b-it", "gemma2", "2.6B", GEMMA_TERMS),
                    new KnownModel(
                            "gemma-3-270m-it", "google/gemma-3-270m-it", "gemma3_text", "270M", GEMMA_TERMS),
                    new KnownModel(
                            "gemma-3-1b-it", "google/gemma-3-1b-it", "gemma3_text", "1B", GEMMA_TERMS),
                    new KnownModel(
                            "Mistral-7B-Instruct-v0.3",
                            "mistralai/Mistral-7B-Instruct-v0.3",
                            "mistral",
                            "7.2B",
                            "Apache-2.0; gated: agree to share your contact details on the hub and set HF_TOKEN"));

    /**
     * Finds a registry entry by name (case-insensitive) or by its Hugging Face id.
     *
     * @param nameOrHubId a registry name or hub id
     * @return the entry, if any
     */
    public static Optional<KnownModel> find(String nameOrHubId) {
        for (KnownModel model : ALL) {
            if (model.name.equalsIgnoreCase(nameOrHubId) || model.hubId.equals(nameOrHubId)) {
                return Optional.of(model);
            }
        }
        return Optional.empty();
    }
}
