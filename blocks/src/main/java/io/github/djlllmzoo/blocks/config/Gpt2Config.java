package io.github.djlllmzoo.blocks.config;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.nio.file.Path;
import java.util.List;

/**
 * The GPT-2 hyper-parameters of a Hugging Face {@code config.json} ({@code model_type} "gpt2"),
 * with the names Hugging Face uses.
 *
 * @param vocabSize {@code vocab_size}
 * @param nPositions {@code n_positions}, the context window
 * @param nEmbd {@code n_embd}, the residual width
 * @param nLayer {@code n_layer}
 * @param nHead {@code n_head}
 * @param nInner {@code n_inner}, the MLP width (4 × n_embd when absent)
 * @param layerNormEpsilon {@code layer_norm_epsilon}
 * @param embdPdrop {@code embd_pdrop}, dropout after the embeddings (training only)
 * @param attnPdrop {@code attn_pdrop}, dropout on attention probabilities (training only)
 * @param residPdrop {@code resid_pdrop}, dropout before each residual add (training only)
 * @param bosTokenId {@code bos_token_id}, or {@code null}
 * @param eosTokenIds {@code eos_token_id} as a list
 * @param tieWordEmbeddings {@code tie_word_embeddings} (true for every released GPT-2)
 */
public record Gpt2Config(
        int vocabSize,
        int nPositions,
        int nEmbd,
        int nLayer,
        int nHead,
        int nInner,
        float layerNormEpsilon,
        float embdPdrop,
        float attnPdrop,
        float residPdrop,
        Integer bosTokenId,
        List<Integer> eosTokenIds,
        boolean tieWordEmbeddings)
        implements DecoderConfig {

    /** The {@code model_type} this record reads. */
    public static final String MODEL_TYPE = "gpt2";

    /**
     * Standard deviation of GPT-2's normal weight initialization (Hugging Face's {@code
     * initializer_range} default).
     */
    public static final float INITIALIZER_RANGE = 0.02f;

    /** Standard deviation of the initialization of the learned position embedding {@code wpe}. */
    public static final float POSITION_INITIALIZER_RANGE = 0.01f;

    /**
     * Validates the values; see {@link #parse(ConfigJson)} for file-aware messages.
     *
     * @param vocabSize {@code vocab_size}
     * @param nPositions {@code n_positions}, the context window
     * @param nEmbd {@code n_embd}, the residual width
     * @param nLayer {@code n_layer}
     * @param nHead {@code n_head}
     * @param nInner {@code n_inner}, the MLP width (4 × n_embd when absent)
     * @param layerNormEpsilon {@code layer_norm_epsilon}
     * @param embdPdrop {@code embd_pdrop}, dropout after the embeddings (training only)
     * @param attnPdrop {@code attn_pdrop}, dropout on attention probabilities (training only)
     * @param residPdrop {@code resid_pdrop}, dropout before each residual add (training only)
     * @param bosTokenId {@code bos_token_id}, or {@code null}
     * @param eosTokenIds {@code eos_token_id} as a list
     * @param tieWordEmbeddings {@code tie_word_embeddings} (true for every released GPT-2)
     */
    public Gpt2Config {
        eosTokenIds = List.copyOf(eosTokenIds);
        if (nHead <= 0 || nEmbd <= 0 || nEmbd % nHead != 0) {
            throw new IllegalArgumentException(
                    "n_embd (" + nEmbd + ") must be a positive multiple of n_head (" + nHead + ")");
        }
    }

    /**
     * Parses a GPT-2 {@code config.json}.
     *
     * @param json the parsed file
     * @return the config
     * @throws InvalidCheckpointException naming the field at fault
     */
    public static Gpt2Config parse(ConfigJson json) throws InvalidCheckpointException {
        int nEmbd = Configs.positive(json, "n_embd");
        int nHead = Configs.positive(json, "n_head");
        if (nEmbd % nHead != 0) {
            throw json.invalid(
                    "n_embd", "must be divisible by n_head (" + nHead + ") to split into heads");
        }
        int nInner = json.optInt("n_inner", 4 * nEmbd);
        if (nInner <= 0) {
            throw json.invalid("n_inner", "must be positive");
        }
        String activation = json.optString("activation_function", "gelu_new");
        if (!"gelu_new".equals(activation)) {
            throw json.invalid(
                    "activation_function", "only gelu_new (GPT-2's tanh GELU) is supported");
        }
        return new Gpt2Config(
                Configs.positive(json, "vocab_size"),
                Configs.positive(json, "n_positions"),
                nEmbd,
                Configs.positive(json, "n_layer"),
                nHead,
                nInner,
                Configs.epsilon(json, "layer_norm_epsilon", 1e-5),
                Configs.probability(json, "embd_pdrop", 0.1),
                Configs.probability(json, "attn_pdrop", 0.1),
                Configs.probability(json, "resid_pdrop", 0.1),
                json.optInteger("bos_token_id"),
                json.optIntList("eos_token_id"),
                json.optBoolean("tie_word_embeddings", true));
    }

    /**
     * Reads and parses a GPT-2 {@code config.json} file.
     *
     * @param file the file
     * @return the config
     * @throws InvalidCheckpointException naming the field at fault
     */
    public static Gpt2Config read(Path file) throws InvalidCheckpointException {
        return parse(ConfigJson.read(file));
    }

    /**
     * GPT-2 scales the initialization of the projections that feed the residual stream by
     * 1/sqrt(2 n_layer).
     *
     * @return the standard deviation for {@code c_proj} weights
     */
    public float residualInitializerRange() {
        return (float) (INITIALIZER_RANGE / Math.sqrt(2.0 * nLayer));
    }

    @Override
    public String modelType() {
        return MODEL_TYPE;
    }

    @Override
    public int hiddenSize() {
        return nEmbd;
    }

    @Override
    public int numLayers() {
        return nLayer;
    }

    @Override
    public int numHeads() {
        return nHead;
    }

    @Override
    public int numKvHeads() {
        return nHead;
    }

    @Override
    public int headDim() {
        return nEmbd / nHead;
    }

    @Override
    public int maxPositions() {
        return nPositions;
    }

    @Override
    public String checkpointPrefix() {
        return "transformer.";
    }
}
