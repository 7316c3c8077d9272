package io.github.djlllmzoo.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

/** A tiny GPT-2 config with a word-level tokenizer, and text over its words, for fine-tuning tests. */
final class TinyWordModel {

    /** The tokenizer's words; id = index, "<eos>" = 0. */
    static final List<String> WORDS =
            List.of("<eos>", "<unk>", "the", "cat", "dog", "sat", "ran", "on", "mat", "rug", ".");

    private TinyWordModel() {}

    /** Writes {@code config.json} and {@code tokenizer.json} (no weights: train it --from-scratch). */
    static Path write(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(
                dir.resolve("config.json"),
                "{\"model_type\": \"gpt2\", \"vocab_size\": " + WORDS.size() + ", \"n_positions\": 32,"
                        + " \"n_embd\": 16, \"n_layer\": 2, \"n_head\": 2, \"bos_token_id\": 0, \"eos_token_id\": 0}\n");
        StringBuilder vocab = new StringBuilder();
        for (int i = 0; i < WORDS.size(); i++) {
            vocab.append(i == 0 ? "" : ", ").append('"').append(WORDS.get(i)).append("\": ").append(i);
        }
        Files.writeString(
                dir.resolve("tokenizer.json"),
                "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 0, \"content\": \"<eos>\", \"single_word\": false,"
                        + " \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}],"
                        + " \"pre_tokenizer\": {\"type\": \"Whitespace\"},"
                        + " \"model\": {\"type\": \"WordLevel\", \"vocab\": {" + vocab + "}, \"unk_token\": \"<unk>\"}}\n");
        return dir;
    }

    /** Writes {@code count} random words (not "<eos>" or "<unk>") drawn with seed 1. */
    static Path text(Path file, int count) throws IOException {
        Random random = new Random(1);
        StringBuilder words = new StringBuilder();
        for (int i = 0; i < count; i++) {
            words.append(WORDS.get(2 + random.nextInt(WORDS.size() - 2))).append(' ');
        }
        return Files.writeString(file, words, StandardCharsets.UTF_8);
    }
}
