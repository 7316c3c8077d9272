package io.github.djlllmzoo.blocks.config;

import java.util.List;

/**
 * What every decoder-only family shares, read from a checkpoint's {@code config.json}. Each family
 * has its own immutable record implementing this ({@link Gpt2Config}, ...).
 */
public interface DecoderConfig {

    /** @return the {@code model_type} of config.json, e.g. "gpt2" or "llama" */
    String modelType();

    /** @return the number of token ids the embedding and LM head cover */
    int vocabSize();

    /** @return the width of the residual stream */
    int hiddenSize();

    /** @return the number of decoder layers */
    int numLayers();

    /** @return the number of query heads */
    int numHeads();

    /** @return the number of key/value heads (equal to {@link #numHeads()} without GQA) */
    int numKvHeads();

    /** @return the width of one attention head */
    int headDim();

    /** @return the longest sequence (prompt plus generated tokens) the model supports */
    int maxPositions();

    /** @return whether the LM head reuses the token embedding matrix */
    boolean tieWordEmbeddings();

    /** @return the beginning-of-sequence token id, or {@code null} when the config names none */
    Integer bosTokenId();

    /** @return the end-of-sequence token ids (any of them ends generation); may be empty */
    List<Integer> eosTokenIds();

    /**
     * The prefix Hugging Face puts before the decoder's tensor names in a causal-LM checkpoint
     * ("transformer." for GPT-2, "model." for Llama); the LM head has none.
     *
     * @return the prefix, ending with a dot
     */
    String checkpointPrefix();

    /**
     * @param layer a layer index
     * @return the positions that layer's queries see, themselves included (Hugging Face's {@code
     *     sliding_window}), or 0 when it attends over the whole sequence
     */
    default int slidingWindow(int layer) {
        return 0;
    }

    /**
     * @return C when the LM head's logits are soft-capped to {@code tanh(logits / C) * C}
     *     (Gemma 2's {@code final_logit_softcapping}), or 0 for none
     */
    default float finalLogitSoftcapping() {
        return 0;
    }
}
