package io.github.djlllmzoo.translators;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * A checkpoint's tokenizer through DJL's {@link HuggingFaceTokenizer}: {@code tokenizer.json}, or,
 * when there is none, GPT-2-style byte-level BPE built from {@code vocab.json} + {@code merges.txt}. Never truncates or pads: the context
 * window is enforced by the generator, not silently by the tokenizer (DJL otherwise cuts inputs to
 * 512 tokens).
 */
public final class TextTokenizer implements AutoCloseable {

    private final HuggingFaceTokenizer tokenizer;

    private TextTokenizer(HuggingFaceTokenizer tokenizer) {
        this.tokenizer = tokenizer;
    }

    /**
     * Loads the tokenizer of a checkpoint directory.
     *
     * @param dir the checkpoint directory
     * @return the tokenizer
     * @throws InvalidCheckpointException if the directory has no usable tokenizer files
     */
    public static TextTokenizer load(Path dir) throws InvalidCheckpointException {
        Map<String, String> options = new HashMap<>();
        options.put("truncation", "false");
        options.put("padding", "false");
        options.put("modelMaxLength", String.valueOf(Integer.MAX_VALUE));
        Path json = dir.resolve("tokenizer.json");
        Path vocab = dir.resolve("vocab.json");
        Path merges = dir.resolve("merges.txt");
        try {
            if (Files.isRegularFile(json)) {
                return new TextTokenizer(HuggingFaceTokenizer.newInstance(json, options));
            }
            if (Files.isRegularFile(vocab) && Files.isRegularFile(merges)) {
                String built = ByteLevelBpeJson.build(vocab, merges, dir.resolve("tokenizer_config.json"));
                try (InputStream in = new ByteArrayInputStream(built.getBytes(StandardCharsets.UTF_8))) {
                    return new TextTokenizer(HuggingFaceTokenizer.newInstance(in, options));
                }
            }
        } catch (IOException | RuntimeException e) {
            Path file = Files.isRegularFile(json) ? json : vocab;
            throw new InvalidCheckpointException(file, null, "cannot load tokenizer: " + e.getMessage(), e);
        }
        throw new InvalidCheckpointException(
                dir, null, "no tokenizer: expected tokenizer.json, or vocab.json and merges.txt");
    }

    /**
     * Whether a checkpoint directory holds tokenizer files.
     *
     * @param dir the checkpoint directory
     * @return true when tokenizer.json or vocab.json + merges.txt exist
     */
    public static boolean isPresent(Path dir) {
        return Files.isRegularFile(dir.resolve("tokenizer.json"))
                || (Files.isRegularFile(dir.resolve("vocab.json"))
                        && Files.isRegularFile(dir.resolve("merges.txt")));
    }

    /**
     * Encodes text, adding the special tokens the tokenizer's post-processor defines (e.g. Llama's
     * BOS; none for GPT-2).
     *
     * @param text the text
     * @return the token ids
     */
    public long[] encode(String text) {
        Encoding encoding = tokenizer.encode(text, true, false);
        return encoding.getIds();
    }

    /**
     * Decodes ids to text, keeping special tokens.
     *
     * @param ids the token ids
     * @return the text
     */
    public String decode(long[] ids) {
        return tokenizer.decode(ids, false);
    }

    /** @return the underlying DJL tokenizer */
    public HuggingFaceTokenizer huggingFaceTokenizer() {
        return tokenizer;
    }

    @Override
    public void close() {
        tokenizer.close();
    }
}
