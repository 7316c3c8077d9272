package io.github.djlllmzoo.blocks.config;

import java.util.List;

/**
 * The file names of a Hugging Face checkpoint directory (a hub snapshot, a {@code
 * save_pretrained} output), spelled once for every module that reads or writes one.
 */
public final class CheckpointFiles {

    /** The model configuration ({@code model_type} and the family's fields). */
    public static final String CONFIG = "config.json";

    /** Single-file safetensors weights. */
    public static final String WEIGHTS = "model.safetensors";

    /** Index of sharded safetensors weights; its {@code weight_map} values name the shards. */
    public static final String WEIGHTS_INDEX = "model.safetensors.index.json";

    /** Generation defaults ({@code max_new_tokens}, {@code eos_token_id}, sampling settings). */
    public static final String GENERATION_CONFIG = "generation_config.json";

    /** A fast tokenizer as Hugging Face {@code tokenizers} saves it. */
    public static final String TOKENIZER = "tokenizer.json";

    /** The tokenizer's settings: special tokens, {@code chat_template}. */
    public static final String TOKENIZER_CONFIG = "tokenizer_config.json";

    /** The special tokens' map. */
    public static final String SPECIAL_TOKENS_MAP = "special_tokens_map.json";

    /** Tokens added to a slow tokenizer's vocabulary. */
    public static final String ADDED_TOKENS = "added_tokens.json";

    /** A byte-level BPE vocabulary (GPT-2's slow-tokenizer files, with {@link #MERGES}). */
    public static final String VOCAB = "vocab.json";

    /** A byte-level BPE merge list. */
    public static final String MERGES = "merges.txt";

    /** A SentencePiece model (Llama's slow tokenizer). */
    public static final String SENTENCEPIECE_MODEL = "tokenizer.model";

    /** Every tokenizer file a checkpoint may carry. */
    public static final List<String> TOKENIZER_FILES =
            List.of(
                    TOKENIZER,
                    TOKENIZER_CONFIG,
                    SPECIAL_TOKENS_MAP,
                    ADDED_TOKENS,
                    VOCAB,
                    MERGES,
                    SENTENCEPIECE_MODEL);

    private CheckpointFiles() {}
}
