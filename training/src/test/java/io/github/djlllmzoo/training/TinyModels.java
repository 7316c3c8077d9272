package io.github.djlllmzoo.training;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.zoo.CheckpointWeights;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Tiny GPT-2 checkpoints and a word-level tokenizer for training tests. */
final class TinyModels {

    /** The words of the test tokenizer; id = index, "<eos>" = 0. */
    static final List<String> WORDS =
            List.of("<eos>", "<unk>", "the", "cat", "dog", "sat", "ran", "on", "mat", "rug", "a", ".");

    private TinyModels() {}

    /** A GPT-2 config without dropout (deterministic training). */
    static Gpt2Config config(int vocab, int positions, int width, int layers, int heads) {
        return new Gpt2Config(
                vocab, positions, width, layers, heads, 2 * width, 1e-5f, 0f, 0f, 0f, 0, List.of(0), true);
    }

    /** The {@code config.json} text of a GPT-2 config. */
    static String gpt2Json(Gpt2Config c) {
        return String.format(
                        java.util.Locale.ROOT,
                        "{\"model_type\": \"gpt2\", \"vocab_size\": %d, \"n_positions\": %d, \"n_embd\": %d,"
                                + " \"n_layer\": %d, \"n_head\": %d, \"n_inner\": %d, \"embd_pdrop\": %s,"
                                + " \"attn_pdrop\": %s, \"resid_pdrop\": %s, \"bos_token_id\": 0,"
                                + " \"eos_token_id\": 0, \"architectures\": [\"GPT2LMHeadModel\"]}\n",
                        c.vocabSize(), c.nPositions(), c.nEmbd(), c.nLayer(), c.nHead(), c.nInner(),
                        c.embdPdrop(), c.attnPdrop(), c.residPdrop());
    }

    /**
     * The {@code config.json} text of a tiny Llama: grouped-query attention (4 query, 2 key/value
     * heads), a head width that is not hidden/heads, biases, no dropout.
     */
    static String llamaJson(int vocab, boolean tied) {
        return "{\"model_type\": \"llama\", \"vocab_size\": " + vocab + ", \"hidden_size\": 16,"
                + " \"intermediate_size\": 24, \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
                + " \"num_key_value_heads\": 2, \"head_dim\": 6, \"max_position_embeddings\": 16,"
                + " \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000.0, \"attention_bias\": true,"
                + " \"mlp_bias\": true, \"attention_dropout\": 0.0, \"tie_word_embeddings\": " + tied + ","
                + " \"bos_token_id\": 0, \"eos_token_id\": 0}\n";
    }

    /** Writes a whitespace-split word-level {@code tokenizer.json} over {@link #WORDS}. */
    static void writeTokenizer(Path dir) throws IOException {
        StringBuilder vocab = new StringBuilder();
        for (int i = 0; i < WORDS.size(); i++) {
            vocab.append(i == 0 ? "" : ", ").append('"').append(WORDS.get(i)).append("\": ").append(i);
        }
        String json =
                "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,"
                        + " \"added_tokens\": [{\"id\": 0, \"content\": \"<eos>\", \"single_word\": false,"
                        + " \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}],"
                        + " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"Whitespace\"},"
                        + " \"post_processor\": null, \"decoder\": null,"
                        + " \"model\": {\"type\": \"WordLevel\", \"vocab\": {" + vocab + "}, \"unk_token\": \"<unk>\"}}\n";
        Files.writeString(dir.resolve("tokenizer.json"), json, StandardCharsets.UTF_8);
    }

    /** Writes a complete checkpoint directory with seeded random weights and the test tokenizer. */
    static Path checkpoint(Path dir, Gpt2Config c, int seed) throws Exception {
        return checkpoint(dir, gpt2Json(c), seed);
    }

    /** Writes a complete checkpoint directory for a {@code config.json} text. */
    static Path checkpoint(Path dir, String configJson, int seed) throws Exception {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("config.json"), configJson, StandardCharsets.UTF_8);
        writeTokenizer(dir);
        Engine.getEngine("PyTorch").setRandomSeed(seed);
        try (LocalModel model = LocalModel.initialize(dir, Device.cpu(), DataType.FLOAT32)) {
            CheckpointWeights.save(model.block(), dir);
        }
        return dir;
    }
}
