package io.github.djlllmzoo.blocks.config;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.util.ArrayList;
import java.util.List;

/**
 * The families {@link LlamaConfig} reads, and what each family's {@code config.json} means for the
 * Llama layout: which projections have biases, which layers attend over a sliding window, what Gemma
 * changes ({@link GemmaLayout}), and which of its fields the project does not support (refused by
 * name, never ignored). The reference is each family's Hugging Face {@code modeling_*.py} and {@code
 * configuration_*.py}.
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
    PHI3("phi3"),
    /**
     * {@code GemmaForCausalLM}: embeddings scaled by sqrt(hidden_size), {@code x * (1 + w)}
     * RMSNorms, a GELU-tanh gated MLP, explicit {@code head_dim}, tied head.
     */
    GEMMA("gemma"),
    /**
     * {@code Gemma2ForCausalLM}: Gemma plus attention and final logit soft-capping, normed sublayer
     * outputs, {@code query_pre_attn_scalar}, a sliding window on the even layers.
     */
    GEMMA2("gemma2"),
    /**
     * {@code Gemma3ForCausalLM} (the text model, {@code gemma3_text}): Gemma 2's layout with {@code
     * q_norm}/{@code k_norm}, every {@code sliding_window_pattern}-th layer global, the others local
     * with their own rotary base.
     */
    GEMMA3("gemma3_text");

    /** The {@code model_type}s {@link LlamaConfig} reads, in the order messages list them. */
    public static final List<String> MODEL_TYPES = modelTypes();

    /** The Gemma config classes' default {@code head_dim} and {@code query_pre_attn_scalar}. */
    private static final int GEMMA_DEFAULT_HEAD_DIM = 256;

    /** {@code Gemma2Config}'s default soft-capping of attention and final logits. */
    private static final double GEMMA2_ATTN_SOFTCAP = 50.0;

    private static final double GEMMA2_FINAL_SOFTCAP = 30.0;

    private static final double GEMMA3_DEFAULT_ROPE_THETA = 1_000_000.0;

    private static final double DEFAULT_ROPE_THETA = 10_000.0;

    private final String modelType;

    LlamaFamily(String modelType) {
        this.modelType = modelType;
    }

    private static List<String> modelTypes() {
        List<String> types = new ArrayList<>();
        for (LlamaFamily family : values()) {
            types.add(family.modelType);
        }
        return List.copyOf(types);
    }

    /** @return the {@code model_type} of this family's configs */
    public String modelType() {
        return modelType;
    }

    /** @return whether this is one of the Gemma families */
    public boolean isGemma() {
        return this == GEMMA || this == GEMMA2 || this == GEMMA3;
    }

    /**
     * @return whether the family's activations exceed float16's range on real checkpoints (Gemma 2
     *     and 3, trained in bfloat16; Hugging Face warns against float16 for them)
     */
    public boolean exceedsFloat16() {
        return this == GEMMA2 || this == GEMMA3;
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
        return (this == LLAMA || this == QWEN3 || isGemma()) && json.optBoolean("attention_bias", false);
    }

    boolean qkvBias(ConfigJson json) throws InvalidCheckpointException {
        // modeling_qwen2.py builds q/k/v_proj with bias=True and o_proj with bias=False whatever
        // the config says.
        return this == QWEN2 || outputBias(json);
    }

    boolean mlpBias(ConfigJson json) throws InvalidCheckpointException {
        return this == LLAMA && json.optBoolean("mlp_bias", false);
    }

    boolean qkNorm() {
        return this == QWEN3 || this == GEMMA3;
    }

    /** The config classes' default: Gemma ties the head to the embeddings, the others do not. */
    boolean tieWordEmbeddings(ConfigJson json) throws InvalidCheckpointException {
        return json.optBoolean("tie_word_embeddings", isGemma());
    }

    /** {@code head_dim} when the config has none: the Gemma config classes' 256, else 0 (derive it). */
    int defaultHeadDim() {
        return isGemma() ? GEMMA_DEFAULT_HEAD_DIM : 0;
    }

    double defaultRopeTheta() {
        return this == GEMMA3 ? GEMMA3_DEFAULT_ROPE_THETA : DEFAULT_ROPE_THETA;
    }

    /**
     * The MLP's activation: {@code hidden_act} (silu only) for the Llama families; {@code
     * hidden_activation} for Gemma ({@code modeling_gemma.py} reads it first, then {@code
     * hidden_act}, defaulting to {@code gelu_pytorch_tanh}).
     */
    HiddenActivation activation(ConfigJson json) throws InvalidCheckpointException {
        if (!isGemma()) {
            HiddenActivation activation = HiddenActivation.parse(json, "hidden_act", HiddenActivation.SILU);
            if (activation != HiddenActivation.SILU) {
                throw json.invalid("hidden_act", "only silu (SwiGLU MLP) is supported for " + modelType);
            }
            return activation;
        }
        if (json.has("hidden_activation") || this != GEMMA) {
            return HiddenActivation.parse(json, "hidden_activation", HiddenActivation.GELU_TANH);
        }
        return HiddenActivation.parse(json, "hidden_act", HiddenActivation.GELU_TANH);
    }

    /**
     * What Gemma changes, or {@code null} for the other families.
     *
     * @param json the config
     * @param headDim its head width (Gemma 1 scales scores by its inverse square root)
     * @return the layout
     */
    GemmaLayout gemmaLayout(ConfigJson json, int headDim) throws InvalidCheckpointException {
        if (!isGemma()) {
            return null;
        }
        if (this == GEMMA) {
            return new GemmaLayout(headDim, 0, 0, false, 0);
        }
        double scalar = json.optDouble("query_pre_attn_scalar", GEMMA_DEFAULT_HEAD_DIM);
        if (!(scalar > 0)) {
            throw json.invalid("query_pre_attn_scalar", "must be positive");
        }
        boolean gemma2 = this == GEMMA2;
        float attnCap = softcap(json, "attn_logit_softcapping", gemma2 ? GEMMA2_ATTN_SOFTCAP : 0);
        float finalCap = softcap(json, "final_logit_softcapping", gemma2 ? GEMMA2_FINAL_SOFTCAP : 0);
        double localTheta = 0;
        if (this == GEMMA3) {
            localTheta = json.optDouble("rope_local_base_freq", DEFAULT_ROPE_THETA);
            if (!(localTheta > 0)) {
                throw json.invalid("rope_local_base_freq", "must be positive");
            }
            if (json.optBoolean("use_bidirectional_attention", false)) {
                throw json.invalid(
                        "use_bidirectional_attention", "bidirectional (embedding) Gemma 3 models are not supported");
            }
        }
        return new GemmaLayout(scalar, attnCap, finalCap, true, localTheta);
    }

    /** A soft-capping value: absent means the family's default, null none. */
    private static float softcap(ConfigJson json, String field, double fallback)
            throws InvalidCheckpointException {
        if (json.json().has(field) && !json.has(field)) {
            return 0;
        }
        double cap = json.optDouble(field, fallback);
        if (cap < 0) {
            throw json.invalid(field, "must be positive, or null for none");
        }
        return (float) cap;
    }

    /**
     * Refuses the fields of this family the project does not implement.
     *
     * @param json the config
     * @throws InvalidCheckpointException naming the field
     */
    void checkUnsupported(ConfigJson json) throws InvalidCheckpointException {
        if (this == PHI3) {
            checkPhi3(json);
        }
        if (isGemma() && json.has("rope_parameters")) {
            throw json.invalid(
                    "rope_parameters",
                    "per-attention-type rope parameters are not supported for " + modelType + "; give rope_theta"
                            + (this == GEMMA3 ? ", rope_local_base_freq and rope_scaling" : ""));
        }
    }

    private static void checkPhi3(ConfigJson json) throws InvalidCheckpointException {
        // Phi-3's configs scale rope by LongRoPE only (Hugging Face's Phi3Config refuses the rest)
        for (String field : new String[] {"rope_scaling", "rope_parameters"}) {
            ConfigJson rope = json.optObject(field);
            if (rope == null) {
                continue;
            }
            String typeField = rope.has("rope_type") ? "rope_type" : "type";
            String type = rope.optString(typeField, "default");
            if (!type.equals("default") && !type.equals(RopeScaling.Type.LONGROPE.jsonName())) {
                throw rope.invalid(typeField, "Phi-3 rope scaling '" + type + "' is not supported; only "
                        + RopeScaling.Type.LONGROPE.jsonName() + " is");
            }
        }
        if (json.optDouble("partial_rotary_factor", 1.0) != 1.0) {
            throw json.invalid(
                    "partial_rotary_factor",
                    "rotary embeddings over part of a head are not supported; only 1.0 is");
        }
        for (String dropout : new String[] {"resid_pdrop", "embd_pdrop"}) {
            if (Configs.probability(json, dropout, 0.0) != 0) {
                throw json.invalid(dropout, "dropout on the residual stream is not supported; only 0");
            }
        }
    }
}
