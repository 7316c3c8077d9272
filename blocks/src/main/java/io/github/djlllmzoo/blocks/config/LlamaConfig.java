package io.github.djlllmzoo.blocks.config;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.nio.file.Path;
import java.util.List;

/**
 * The hyper-parameters of a Llama-shaped {@code config.json}, with the names Hugging Face uses:
 * {@code model_type} "llama", "mistral" (with its sliding window), and the families that
 * differ from Llama only in where projections have biases, whether queries and keys are normalized
 * per head, how projections are stored, and what Gemma changes ({@link LlamaFamily}: "qwen2", "qwen3",
 * "phi3", "gemma", "gemma2", "gemma3_text"). Absent optional fields take Hugging Face's defaults of
 * the family's config class.
 *
 * <p>A layer's sliding window W (query {@code i} attends keys {@code i-W+1 .. i}) is decided per
 * layer by the family's rules ({@link LlamaFamily}); a window of at least {@code
 * max_position_embeddings} changes nothing (no key is ever farther away) and is dropped.
 *
 * @param modelType {@code model_type}: one of {@link LlamaFamily#MODEL_TYPES}
 * @param vocabSize {@code vocab_size}
 * @param hiddenSize {@code hidden_size}, the residual width
 * @param intermediateSize {@code intermediate_size}, the MLP width
 * @param numHiddenLayers {@code num_hidden_layers}
 * @param numAttentionHeads {@code num_attention_heads}, the query heads
 * @param numKeyValueHeads {@code num_key_value_heads} (= query heads when absent; 1 is MQA)
 * @param headDim {@code head_dim} (hidden_size / num_attention_heads when absent)
 * @param maxPositionEmbeddings {@code max_position_embeddings}, the context window
 * @param rmsNormEps {@code rms_norm_eps}
 * @param ropeTheta {@code rope_theta}, the rotary base
 * @param ropeScaling {@code rope_scaling}, or {@code null} for none
 * @param attentionBias {@code attention_bias}: whether the output projection {@code o_proj} has a
 *     bias
 * @param qkvBias whether the query, key and value projections have biases ({@code attention_bias}
 *     in Llama and Qwen3; always in Qwen2)
 * @param qkNorm whether queries and keys go through a per-head RMSNorm ({@code q_norm}, {@code
 *     k_norm}, over {@code head_dim}) before the rotary embedding (Qwen3)
 * @param fusedProjections whether the checkpoint stores q, k, v as one {@code qkv_proj} and the
 *     MLP's gate and up as one {@code gate_up_proj} (Phi-3)
 * @param attentionDropout {@code attention_dropout} on attention probabilities (training only)
 * @param mlpBias {@code mlp_bias}: whether the MLP projections have biases
 * @param hiddenActivation the gated MLP's activation ({@code hidden_act}, Gemma's {@code
 *     hidden_activation})
 * @param layerWindows each layer's sliding window, or 0 for a layer that sees the whole sequence
 * @param gemma what Gemma changes in the layout, or {@code null} for the other families
 * @param initializerRange {@code initializer_range}, the std of weights initialized from scratch
 * @param tieWordEmbeddings {@code tie_word_embeddings}
 * @param bosTokenId {@code bos_token_id}, or {@code null}
 * @param eosTokenIds {@code eos_token_id} as a list (Llama 3 lists several)
 */
public record LlamaConfig(
        String modelType,
        int vocabSize,
        int hiddenSize,
        int intermediateSize,
        int numHiddenLayers,
        int numAttentionHeads,
        int numKeyValueHeads,
        int headDim,
        int maxPositionEmbeddings,
        float rmsNormEps,
        double ropeTheta,
        RopeScaling ropeScaling,
        boolean attentionBias,
        boolean qkvBias,
        boolean qkNorm,
        boolean fusedProjections,
        float attentionDropout,
        boolean mlpBias,
        HiddenActivation hiddenActivation,
        List<Integer> layerWindows,
        GemmaLayout gemma,
        float initializerRange,
        boolean tieWordEmbeddings,
        Integer bosTokenId,
        List<Integer> eosTokenIds)
        implements DecoderConfig {

    /** The {@code model_type} of Llama checkpoints. */
    public static final String MODEL_TYPE = "llama";

    /**
     * The {@code model_type} of Mistral checkpoints (same layout; read when no window is in use).
     */
    public static final String MISTRAL_MODEL_TYPE = "mistral";

    /** Hugging Face's {@code MistralConfig} default for an absent {@code sliding_window}. */
    static final int MISTRAL_DEFAULT_SLIDING_WINDOW = 4096;

    /**
     * Validates the values; see {@link #parse(ConfigJson)} for file-aware messages.
     *
     * @param modelType {@code model_type}: one of {@link LlamaFamily#MODEL_TYPES}
     * @param vocabSize {@code vocab_size}
     * @param hiddenSize {@code hidden_size}, the residual width
     * @param intermediateSize {@code intermediate_size}, the MLP width
     * @param numHiddenLayers {@code num_hidden_layers}
     * @param numAttentionHeads {@code num_attention_heads}, the query heads
     * @param numKeyValueHeads {@code num_key_value_heads} (= query heads when absent; 1 is MQA)
     * @param headDim {@code head_dim} (hidden_size / num_attention_heads when absent)
     * @param maxPositionEmbeddings {@code max_position_embeddings}, the context window
     * @param rmsNormEps {@code rms_norm_eps}
     * @param ropeTheta {@code rope_theta}, the rotary base
     * @param ropeScaling {@code rope_scaling}, or {@code null} for none
     * @param attentionBias {@code attention_bias}: whether the output projection {@code o_proj} has a bias
     * @param qkvBias whether the query, key and value projections have biases ({@code attention_bias} in Llama and Qwen3; always in Qwen2)
     * @param qkNorm whether queries and keys go through a per-head RMSNorm ({@code q_norm}, {@code k_norm}, over {@code head_dim}) before the rotary embedding (Qwen3)
     * @param fusedProjections whether the checkpoint stores q, k, v as one {@code qkv_proj} and the MLP's gate and up as one {@code gate_up_proj} (Phi-3)
     * @param attentionDropout {@code attention_dropout} on attention probabilities (training only)
     * @param mlpBias {@code mlp_bias}: whether the MLP projections have biases
     * @param hiddenActivation the gated MLP's activation ({@code hidden_act}, Gemma's {@code hidden_activation})
     * @param layerWindows each layer's sliding window, or 0 for a layer that sees the whole sequence
     * @param gemma what Gemma changes in the layout, or {@code null} for the other families
     * @param initializerRange {@code initializer_range}, the std of weights initialized from scratch
     * @param tieWordEmbeddings {@code tie_word_embeddings}
     * @param bosTokenId {@code bos_token_id}, or {@code null}
     * @param eosTokenIds {@code eos_token_id} as a list (Llama 3 lists several)
     */
    public LlamaConfig {
        if (!LlamaFamily.MODEL_TYPES.contains(modelType)) {
            throw new IllegalArgumentException(
                    "model_type must be one of "
                            + String.join(", ", LlamaFamily.MODEL_TYPES)
                            + ", got "
                            + modelType);
        }
        if (vocabSize <= 0
                || hiddenSize <= 0
                || intermediateSize <= 0
                || numHiddenLayers <= 0
                || maxPositionEmbeddings <= 0) {
            throw new IllegalArgumentException("sizes must be positive");
        }
        if (numAttentionHeads <= 0
                || numKeyValueHeads <= 0
                || numAttentionHeads % numKeyValueHeads != 0) {
            throw new IllegalArgumentException(
                    "num_key_value_heads ("
                            + numKeyValueHeads
                            + ") must be positive and divide num_attention_heads ("
                            + numAttentionHeads
                            + ")");
        }
        if (headDim <= 0 || headDim % 2 != 0) {
            throw new IllegalArgumentException(
                    "head_dim must be positive and even for rotary embeddings, got " + headDim);
        }
        if (!(rmsNormEps > 0) || !(ropeTheta > 0) || !(initializerRange > 0)) {
            throw new IllegalArgumentException(
                    "rms_norm_eps, rope_theta and initializer_range must be positive");
        }
        if (ropeScaling != null && ropeScaling.type() == RopeScaling.Type.LONGROPE
                && ropeScaling.longFactor().size() != headDim / 2) {
            throw new IllegalArgumentException("longrope needs head_dim / 2 = " + headDim / 2 + " factors, got "
                    + ropeScaling.longFactor().size());
        }
        if (!(attentionDropout >= 0 && attentionDropout < 1)) {
            throw new IllegalArgumentException("attention_dropout must be in [0, 1)");
        }
        if (hiddenActivation == null) {
            throw new IllegalArgumentException("hidden activation is required");
        }
        if (layerWindows.size() != numHiddenLayers) {
            throw new IllegalArgumentException(
                    layerWindows.size() + " layer windows for " + numHiddenLayers + " layers");
        }
        for (int window : layerWindows) {
            if (window < 0) {
                throw new IllegalArgumentException("sliding_window must be positive, or 0 for none");
            }
        }
        layerWindows = List.copyOf(layerWindows);
        eosTokenIds = List.copyOf(eosTokenIds);
    }

    /**
     * Parses the {@code config.json} of any family of {@link LlamaFamily#MODEL_TYPES}, applying
     * that family's rules ({@link LlamaFamily}).
     *
     * @param json the parsed file
     * @return the config
     * @throws InvalidCheckpointException naming the field at fault
     */
    public static LlamaConfig parse(ConfigJson json) throws InvalidCheckpointException {
        String modelType = json.requireString("model_type");
        if (!LlamaFamily.MODEL_TYPES.contains(modelType)) {
            throw json.invalid(
                    "model_type", "expected one of " + String.join(", ", LlamaFamily.MODEL_TYPES));
        }
        LlamaFamily family = LlamaFamily.of(modelType);
        int hidden = Configs.positive(json, "hidden_size");
        int heads = Configs.positive(json, "num_attention_heads");
        int kvHeads =
                json.has("num_key_value_heads")
                        ? Configs.positive(json, "num_key_value_heads")
                        : heads;
        if (heads % kvHeads != 0) {
            throw json.invalid(
                    "num_key_value_heads",
                    "must divide num_attention_heads ("
                            + heads
                            + ") so query heads form equal groups");
        }
        int headDim;
        if (json.has("head_dim") || family.defaultHeadDim() > 0) {
            headDim = json.has("head_dim") ? Configs.positive(json, "head_dim") : family.defaultHeadDim();
            if (headDim % 2 != 0) {
                throw json.invalid("head_dim", "must be even for rotary position embeddings");
            }
        } else {
            if (hidden % heads != 0) {
                throw json.invalid(
                        "hidden_size",
                        "must be divisible by num_attention_heads ("
                                + heads
                                + ") when head_dim is absent");
            }
            headDim = hidden / heads;
            if (headDim % 2 != 0) {
                throw json.invalid(
                        "hidden_size",
                        "gives an odd head dimension "
                                + headDim
                                + " (hidden_size / num_attention_heads); rotary embeddings need an"
                                + " even one");
            }
        }
        int maxPositions = Configs.positive(json, "max_position_embeddings");
        int layers = Configs.positive(json, "num_hidden_layers");
        List<Integer> layerWindows = LayerWindows.of(family, json, layers, maxPositions);
        family.checkUnsupported(json);
        HiddenActivation activation = family.activation(json);
        ConfigJson ropeParameters = json.optObject("rope_parameters");
        ConfigJson ropeScaling = json.optObject("rope_scaling");
        double ropeTheta =
                ropeParameters != null && ropeParameters.has("rope_theta")
                        ? ropeParameters.requireDouble("rope_theta")
                        : json.optDouble("rope_theta", family.defaultRopeTheta());
        if (ropeTheta <= 0) {
            throw ropeParameters != null && ropeParameters.has("rope_theta")
                    ? ropeParameters.invalid("rope_theta", "must be positive")
                    : json.invalid("rope_theta", "must be positive");
        }
        RopeScaling scaling =
                ropeScaling != null
                        ? RopeScaling.parse(ropeScaling, json, headDim)
                        : ropeParameters != null ? RopeScaling.parse(ropeParameters, json, headDim) : null;
        double initializerRange = json.optDouble("initializer_range", 0.02);
        if (initializerRange <= 0) {
            throw json.invalid("initializer_range", "must be positive");
        }
        return new LlamaConfig(
                modelType,
                Configs.positive(json, "vocab_size"),
                hidden,
                Configs.positive(json, "intermediate_size"),
                layers,
                heads,
                kvHeads,
                headDim,
                maxPositions,
                Configs.epsilon(json, "rms_norm_eps", 1e-6),
                ropeTheta,
                scaling,
                family.outputBias(json),
                family.qkvBias(json),
                family.qkNorm(),
                family == LlamaFamily.PHI3,
                Configs.probability(json, "attention_dropout", 0.0),
                family.mlpBias(json),
                activation,
                layerWindows,
                family.gemmaLayout(json, headDim),
                (float) initializerRange,
                family.tieWordEmbeddings(json),
                json.optInteger("bos_token_id"),
                json.optIntList("eos_token_id"));
    }

    /**
     * Reads and parses a Llama-shaped {@code config.json} file.
     *
     * @param file the file
     * @return the config
     * @throws InvalidCheckpointException naming the field at fault
     */
    public static LlamaConfig read(Path file) throws InvalidCheckpointException {
        return parse(ConfigJson.read(file));
    }

    @Override
    public int slidingWindow(int layer) {
        return layerWindows.get(layer);
    }

    @Override
    public float finalLogitSoftcapping() {
        return gemma == null ? 0 : gemma.finalLogitSoftcapping();
    }

    /** @return the model's family */
    public LlamaFamily family() {
        return LlamaFamily.of(modelType);
    }

    @Override
    public int numLayers() {
        return numHiddenLayers;
    }

    @Override
    public int numHeads() {
        return numAttentionHeads;
    }

    @Override
    public int numKvHeads() {
        return numKeyValueHeads;
    }

    @Override
    public int maxPositions() {
        return maxPositionEmbeddings;
    }

    @Override
    public String checkpointPrefix() {
        return "model.";
    }
}
