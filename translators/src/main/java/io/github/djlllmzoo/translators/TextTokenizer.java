package io.github.djlllmzoo.translators;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.google.gson.JsonElement;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.constrained.TokenVocabulary;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * A checkpoint's tokenizer through DJL's {@link HuggingFaceTokenizer}: {@code tokenizer.json}, or,
 * when there is none, GPT-2-style byte-level BPE built from {@code vocab.json} + {@code merges.txt}. Never truncates or pads: the context
 * window is enforced by the generator, not silently by the tokenizer (DJL otherwise cuts inputs to
 * 512 tokens).
 *
 * <p>The beginning-of-sequence token follows {@code tokenizer_config.json} when it sets {@code
 * add_bos_token} (as Hugging Face's Llama tokenizers do), else the post-processor of {@code
 * tokenizer.json}; either way it is never added to a text that already starts with it.
 */
public final class TextTokenizer implements AutoCloseable {

    private final HuggingFaceTokenizer tokenizer;
    private final int vocabularySize;
    private final Boolean addBosToken;
    private final Long bosTokenId;
    /** tokenizer.json's text, or where to read it; kept until {@link #tokenVocabulary()} needs it. */
    private final TokenizerSource source;
    private TokenVocabulary vocabulary;

    /** tokenizer.json: a file, or the text built from vocab.json + merges.txt. */
    private record TokenizerSource(Path file, String text) {
        String read() throws IOException {
            return text != null ? text : Files.readString(file, StandardCharsets.UTF_8);
        }
    }

    private TextTokenizer(
            HuggingFaceTokenizer tokenizer,
            int vocabularySize,
            Boolean addBosToken,
            Long bosTokenId,
            TokenizerSource source) {
        this.tokenizer = tokenizer;
        this.vocabularySize = vocabularySize;
        this.addBosToken = addBosToken;
        this.bosTokenId = bosTokenId;
        this.source = source;
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
        Path json = dir.resolve(CheckpointFiles.TOKENIZER);
        Path vocab = dir.resolve(CheckpointFiles.VOCAB);
        Path merges = dir.resolve(CheckpointFiles.MERGES);
        HuggingFaceTokenizer tokenizer;
        int vocabularySize;
        TokenizerSource source;
        try {
            if (Files.isRegularFile(json)) {
                source = new TokenizerSource(json, null);
                vocabularySize = TokenizerJson.vocabularySize(json, Files.readString(json, StandardCharsets.UTF_8));
                tokenizer = HuggingFaceTokenizer.newInstance(json, options);
            } else if (Files.isRegularFile(vocab) && Files.isRegularFile(merges)) {
                String built = ByteLevelBpeJson.build(vocab, merges, dir.resolve(CheckpointFiles.TOKENIZER_CONFIG));
                source = new TokenizerSource(null, built);
                vocabularySize = TokenizerJson.vocabularySize(vocab, built);
                try (InputStream in = new ByteArrayInputStream(built.getBytes(StandardCharsets.UTF_8))) {
                    tokenizer = HuggingFaceTokenizer.newInstance(in, options);
                }
            } else {
                throw new InvalidCheckpointException(
                        dir, null, "no tokenizer: expected tokenizer.json, or vocab.json and merges.txt");
            }
        } catch (IOException | RuntimeException e) {
            Path file = Files.isRegularFile(json) ? json : vocab;
            throw new InvalidCheckpointException(file, null, "cannot load tokenizer: " + e.getMessage(), e);
        }
        Path configFile = dir.resolve(CheckpointFiles.TOKENIZER_CONFIG);
        if (!Files.exists(configFile)) {
            return new TextTokenizer(tokenizer, vocabularySize, null, null, source);
        }
        try {
            ConfigJson config = ConfigJson.read(configFile);
            Boolean addBos = config.has("add_bos_token") ? config.optBoolean("add_bos_token", true) : null;
            return new TextTokenizer(tokenizer, vocabularySize, addBos, bosTokenId(config, tokenizer), source);
        } catch (InvalidCheckpointException | RuntimeException e) {
            tokenizer.close();
            throw e;
        }
    }

    /**
     * The id of {@code bos_token} in tokenizer_config.json, given as a string or as an added-token
     * object with a {@code content} field.
     */
    private static Long bosTokenId(ConfigJson config, HuggingFaceTokenizer tokenizer)
            throws InvalidCheckpointException {
        if (!config.has("bos_token")) {
            return null;
        }
        JsonElement value = config.json().get("bos_token");
        String content;
        if (value.isJsonObject()) {
            content = config.optObject("bos_token").requireString("content");
        } else {
            content = config.requireString("bos_token");
        }
        long[] ids = tokenizer.encode(content, false, false).getIds();
        if (ids.length != 1) {
            throw config.invalid(
                    "bos_token", "is not a single token of tokenizer.json (encodes to " + Arrays.toString(ids) + ")");
        }
        return ids[0];
    }

    /**
     * Whether a checkpoint directory holds tokenizer files.
     *
     * @param dir the checkpoint directory
     * @return true when tokenizer.json or vocab.json + merges.txt exist
     */
    public static boolean isPresent(Path dir) {
        return Files.isRegularFile(dir.resolve(CheckpointFiles.TOKENIZER))
                || (Files.isRegularFile(dir.resolve(CheckpointFiles.VOCAB))
                        && Files.isRegularFile(dir.resolve(CheckpointFiles.MERGES)));
    }

    /**
     * Encodes text with the special tokens the tokenizer adds (e.g. Llama's BOS; none for GPT-2).
     * A BOS goes first when {@code add_bos_token} of tokenizer_config.json says so or, without that
     * setting, when the post-processor of tokenizer.json adds one; never when the text itself
     * already starts with the BOS token (e.g. {@code "<s>Hello"} gives one BOS, not two).
     *
     * @param text the text
     * @return the token ids
     */
    public long[] encode(String text) {
        Encoding encoding = tokenizer.encode(text, true, false);
        long[] ids = encoding.getIds();
        long[] special = encoding.getSpecialTokenMask();
        boolean postProcessorBos =
                ids.length > 0 && special[0] == 1 && (bosTokenId == null || ids[0] == bosTokenId);
        Long bos = bosTokenId != null ? bosTokenId : postProcessorBos ? Long.valueOf(ids[0]) : null;
        long[] body = postProcessorBos ? Arrays.copyOfRange(ids, 1, ids.length) : ids;
        boolean wantBos = addBosToken != null ? addBosToken : postProcessorBos;
        if (!wantBos || bos == null || (body.length > 0 && body[0] == bos)) {
            return body;
        }
        long[] out = new long[body.length + 1];
        out[0] = bos;
        System.arraycopy(body, 0, out, 1, body.length);
        return out;
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

    /**
     * Decodes tokens that continue {@code context}, as they read after it. Decoding them alone
     * would be wrong for SentencePiece-style tokenizers, whose decoder drops the leading space of a
     * text's first piece (Llama 2's {@code ▁world} alone decodes to {@code "world"}, after {@code
     * Hello} to {@code " world"}), and for byte-fallback characters split across the boundary.
     *
     * @param context the tokens before (e.g. the prompt)
     * @param ids the continuation
     * @return the continuation's text
     */
    public String decodeContinuation(long[] context, long[] ids) {
        if (context.length == 0) {
            return decode(ids);
        }
        long[] all = Arrays.copyOf(context, context.length + ids.length);
        System.arraycopy(ids, 0, all, context.length, ids.length);
        String full = decode(all);
        String before = decode(context);
        return full.startsWith(before) ? full.substring(before.length()) : decode(ids);
    }

    /** @return the number of token ids the tokenizer can produce (its largest id + 1) */
    public int vocabularySize() {
        return vocabularySize;
    }

    /**
     * The bytes each token id stands for, as constrained decoding needs them (byte-level BPE
     * decoded through GPT-2's byte map, SentencePiece's {@code ▁} as a space and {@code <0xNN>}
     * as that byte; added tokens atomic). Built on first use and kept.
     *
     * @return the vocabulary
     * @throws IllegalStateException if tokenizer.json can no longer be read
     */
    public synchronized TokenVocabulary tokenVocabulary() {
        if (vocabulary == null) {
            try {
                vocabulary = TokenVocabulary.fromTokenizerJson(source.read());
            } catch (IOException e) {
                throw new IllegalStateException("cannot read " + source.file() + ": " + e.getMessage(), e);
            }
        }
        return vocabulary;
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
