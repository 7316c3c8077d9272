package io.github.djlllmzoo.blocks.config;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;

/** The gated MLP activations the Llama-shaped families use, by their Hugging Face {@code ACT2FN} names. */
public enum HiddenActivation {
    /** SiLU (swish), the SwiGLU MLP of Llama, Mistral, Qwen and Phi-3. */
    SILU("silu"),
    /** GELU with the tanh approximation ({@code gelu_pytorch_tanh}), the GeGLU MLP of Gemma. */
    GELU_TANH("gelu_pytorch_tanh");

    private final String jsonName;

    HiddenActivation(String jsonName) {
        this.jsonName = jsonName;
    }

    /** @return the name config.json gives it */
    public String jsonName() {
        return jsonName;
    }

    /**
     * The activation a field names.
     *
     * @param json the config
     * @param field the field that names it ({@code hidden_act} or {@code hidden_activation})
     * @param fallback the family's default when the field is absent or null
     * @return the activation
     * @throws InvalidCheckpointException naming the field when it names another activation
     */
    static HiddenActivation parse(ConfigJson json, String field, HiddenActivation fallback)
            throws InvalidCheckpointException {
        String name = json.optString(field, fallback.jsonName);
        for (HiddenActivation activation : values()) {
            if (activation.jsonName.equals(name)) {
                return activation;
            }
        }
        // gelu_new is the same tanh approximation under GPT-2's name
        if ("gelu_new".equals(name)) {
            return GELU_TANH;
        }
        throw json.invalid(
                field, "unsupported activation '" + name + "'; supported: silu, gelu_pytorch_tanh, gelu_new");
    }
}
