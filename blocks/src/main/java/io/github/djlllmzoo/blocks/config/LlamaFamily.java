package io.github.djlllmzoo.blocks.config;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.util.List;

/**
 * The families {@link LlamaConfig} reads, and what each family's {@code config.json} means for the
 * Llama layout: which projections have biases, and which of its fields the project does not support
 * (refused by name, never ignored). The reference is each family's Hugging Face {@code
 * modeling_*.py}.
 */
public enum LlamaFamily {
    /** {@code LlamaForCausalLM}: {@code attention_bias} on q/k/v/o, {@code mlp_bias} on the MLP. */
    LLAMA(LlamaConfig.MODEL_TYPE),
    /** {@code MistralForCausalLM}: Llama's layout, no biases, a {@code sliding_window} on every layer. */
    MISTRAL(LlamaConfig.MISTRAL_MODEL_TYPE),
    /** {@code Qwen2ForCausalLM} (Qwen2, Qwen2.5): biases on q/k/v always, never on o_proj. */
    QWEN2("qwen2"),
    /**
     * {@code Qwen3ForCausalLM}: {@code attention_bias} on q/k/v/o, per-head RMSNorm {@code
     * q_norm}/{@code k_norm} before the rotary embedding.
     */
    QWEN3("qwen3"),
    /** {@code Phi3ForCausalLM}: fused {@code qkv_proj} and {@code gate_up_proj}, no biases. */
    PHI3("phi3");

    /** The {@code model_type}s {@link LlamaConfig} reads, in the order messages list them. */
    public static final List<String> MODEL_TYPES =
            List.of(LLAMA.modelType, MISTRAL.modelType, QWEN2.modelType, QWEN3.modelType, PHI3.modelType);

    /** Hugging Face's {@code Qwen2Config}/{@code Qwen3Config} default for {@code max_window_layers}. */
    private static final int QWEN_DEFAULT_MAX_WINDOW_LAYERS = 28;

    private final String modelType;

    LlamaFamily(String modelType) {
        this.modelType = modelType;
    }

    /** @return the {@code model_type} of this family's configs */
    public String modelType() {
        return modelType;
    }

    /**
     * The family of a {@code model_type}.
     *
     * @param modelType one of {@link #MODEL_TYPES}
     * @return its family
     */
    public static LlamaFamily of(String modelType) {
        for (LlamaFamily family : values()) {
            if (family.modelType.equals(modelType)) {
                return family;
            }
        }
        throw new IllegalArgumentException(
                "model_type must be one of " + String.join(", ", MODEL_TYPES) + ", got " + modelType);
    }

    boolean outputBias(ConfigJson json) throws InvalidCheckpointException {
        return (this == LLAMA || this == QWEN3) && json.optBoolean("attention_bias", false);
    }

    boolean qkvBias(ConfigJson json) throws InvalidCheckpointException {
        // modeling_qwen2.py builds q/k/v_proj with bias=True and o_proj with bias=False whatever
        // the config says.
        return this == QWEN2 || outputBias(json);
    }

    boolean mlpBias(ConfigJson json) throws InvalidCheckpointException {
        return this == LLAMA && json.optBoolean("mlp_bias", false);
    }

    /**
     * Refuses the fields of this family the project does not implement.
     *
     * @param json the config
     * @param maxPositions its {@code max_position_embeddings}
     * @throws InvalidCheckpointException naming the field
     */
    void checkUnsupported(ConfigJson json, int maxPositions) throws InvalidCheckpointException {
        switch (this) {
            case QWEN2:
            case QWEN3:
                checkQwenWindow(json, maxPositions);
                break;
            case PHI3:
                checkPhi3(json, maxPositions);
                break;
            default:
                break;
        }
    }

    /**
     * Qwen's sliding window applies only when {@code use_sliding_window} is true, to the layers from
     * {@code max_window_layers} on ({@code layer_types} "sliding_attention" in newer configs).
     */
    private static void checkQwenWindow(ConfigJson json, int maxPositions)
            throws InvalidCheckpointException {
        if (json.json().has("layer_types") && json.json().get("layer_types").isJsonArray()) {
            for (var type : json.json().getAsJsonArray("layer_types")) {
                if (!"full_attention".equals(type.getAsString())) {
                    throw json.invalid(
                            "layer_types",
                            "has '"
                                    + type.getAsString()
                                    + "' layers; sliding-window attention is supported only for mistral");
                }
            }
        }
        if (!json.optBoolean("use_sliding_window", false) || !json.has("sliding_window")) {
            return;
        }
        int window = Configs.positive(json, "sliding_window");
        int layers = Configs.positive(json, "num_hidden_layers");
        int firstWindowed = json.optInt("max_window_layers", QWEN_DEFAULT_MAX_WINDOW_LAYERS);
        if (window < maxPositions && firstWindowed < layers) {
            throw json.invalid(
                    "use_sliding_window",
                    "is true with sliding_window "
                            + window
                            + " below max_position_embeddings ("
                            + maxPositions
                            + ") on layers "
                            + firstWindowed
                            + " and up; sliding-window attention is supported only for mistral");
        }
    }

    private static void checkPhi3(ConfigJson json, int maxPositions)
            throws InvalidCheckpointException {
        ConfigJson ropeScaling = json.optObject("rope_scaling");
        if (ropeScaling != null) {
            String type =
                    ropeScaling.optString(
                            "type", ropeScaling.optString("rope_type", "(no type given)"));
            throw json.invalid(
                    "rope_scaling",
                    "Phi-3 rope scaling '"
                            + type
                            + "' (long-context variants) is not supported; only null is");
        }
        ConfigJson ropeParameters = json.optObject("rope_parameters");
        if (ropeParameters != null
                && !"default".equals(ropeParameters.optString("rope_type", "default"))) {
            throw ropeParameters.invalid(
                    "rope_type",
                    "Phi-3 rope scaling '"
                            + ropeParameters.requireString("rope_type")
                            + "' (long-context variants) is not supported; only default is");
        }
        if (json.optDouble("partial_rotary_factor", 1.0) != 1.0) {
            throw json.invalid(
                    "partial_rotary_factor",
                    "rotary embeddings over part of a head are not supported; only 1.0 is");
        }
        if (json.has("sliding_window")) {
            int window = Configs.positive(json, "sliding_window");
            if (window < maxPositions) {
                throw json.invalid(
                        "sliding_window",
                        window
                                + " is below max_position_embeddings ("
                                + maxPositions
                                + "); sliding-window attention is supported only for mistral");
            }
        }
        for (String dropout : new String[] {"resid_pdrop", "embd_pdrop"}) {
            if (Configs.probability(json, dropout, 0.0) != 0) {
                throw json.invalid(dropout, "dropout on the residual stream is not supported; only 0");
            }
        }
    }
}
