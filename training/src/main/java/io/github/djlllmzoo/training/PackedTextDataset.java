package io.github.djlllmzoo.training;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Record;
import ai.djl.training.dataset.BatchSampler;
import ai.djl.training.dataset.SequenceSampler;
import ai.djl.util.Progress;
import io.github.djlllmzoo.translators.TextTokenizer;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * Text for causal-LM training: documents tokenized, concatenated with an end-of-sequence token after
 * each, and cut into non-overlapping windows of {@code T + 1} tokens that share their boundary
 * token (window {@code i} covers tokens {@code i*T .. i*T + T}). Record {@code i} has data {@code
 * [input_ids (T)]} (the first {@code T} tokens of the window) and labels {@code [targets (T)]} (the
 * last {@code T}), so every token after the first is predicted exactly once. The tail that does not
 * fill a window is dropped.
 */
public final class PackedTextDataset extends RandomAccessDataset {

    private final int[] tokens;
    private final int sequenceLength;

    private PackedTextDataset(Builder builder) {
        super(builder);
        this.tokens = builder.tokens;
        this.sequenceLength = builder.sequenceLength;
    }

    /** @return a builder */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Tokenizes text files as {@link #tokenizeFiles(TextTokenizer, List, long, int)} does, with the
     * tokenizer's own vocabulary size as the bound on the separator.
     *
     * @param tokenizer the model's tokenizer
     * @param files UTF-8 text files
     * @param separatorId the id appended after each document, or a negative value for none
     * @return the concatenated token ids
     * @throws IOException if a file cannot be read or is not UTF-8
     * @throws TokenIdOutOfRangeException if the separator is not an id of the tokenizer
     */
    public static int[] tokenizeFiles(TextTokenizer tokenizer, List<Path> files, long separatorId)
            throws IOException {
        return tokenizeFiles(tokenizer, files, separatorId, tokenizer.vocabularySize());
    }

    /**
     * Tokenizes text files, one document per file, each followed by {@code separatorId} (the
     * model's end-of-sequence token: {@code LocalModel.documentSeparatorId()}). Special tokens the
     * tokenizer adds (e.g. Llama's BOS) start every document; special tokens written literally in
     * the text (e.g. {@code <|endoftext|>}) become their ids.
     *
     * @param tokenizer the model's tokenizer
     * @param files UTF-8 text files
     * @param separatorId the id appended after each document, or a negative value for none
     * @param vocabularySize the model's vocabulary size ({@code vocab_size} of its config.json):
     *     every id must be below it
     * @return the concatenated token ids
     * @throws IOException if a file cannot be read or is not UTF-8
     * @throws TokenIdOutOfRangeException naming the separator argument or the file whose text gave
     *     an id outside the vocabulary
     */
    public static int[] tokenizeFiles(
            TextTokenizer tokenizer, List<Path> files, long separatorId, int vocabularySize)
            throws IOException {
        TokenIdOutOfRangeException.requireVocabularySize(vocabularySize);
        if (separatorId >= 0) {
            TokenIdOutOfRangeException.check("the document separator argument", separatorId, vocabularySize);
        }
        TokenBuffer out = new TokenBuffer();
        for (Path file : files) {
            String text;
            try {
                text = Files.readString(file, StandardCharsets.UTF_8);
            } catch (CharacterCodingException e) {
                throw new InvalidTrainingDataException(file, 0, "not valid UTF-8 text", e);
            }
            long[] ids = tokenizer.encode(text);
            TokenIdOutOfRangeException.check(file.toString(), ids, vocabularySize);
            out.add(ids);
            if (separatorId >= 0) {
                out.add(new long[] {separatorId});
            }
        }
        return out.toArray();
    }

    /** @return the number of tokens each record feeds the model */
    public int sequenceLength() {
        return sequenceLength;
    }

    /** @return the number of tokens before packing (the dropped tail included) */
    public int tokenCount() {
        return tokens.length;
    }

    /** @return the largest token id, or -1 when there are no tokens */
    public int maxTokenId() {
        return Arrays.stream(tokens).max().orElse(-1);
    }

    @Override
    public Record get(NDManager manager, long index) {
        int from = Math.toIntExact(index * sequenceLength);
        long[] window = new long[sequenceLength + 1];
        for (int i = 0; i <= sequenceLength; i++) {
            window[i] = tokens[from + i];
        }
        long[] input = Arrays.copyOfRange(window, 0, sequenceLength);
        long[] targets = Arrays.copyOfRange(window, 1, sequenceLength + 1);
        return new Record(
                new NDList(manager.create(input, new Shape(sequenceLength))),
                new NDList(manager.create(targets, new Shape(sequenceLength))));
    }

    @Override
    protected long availableSize() {
        return tokens.length <= sequenceLength ? 0 : (tokens.length - 1) / sequenceLength;
    }

    @Override
    public void prepare(Progress progress) {}

    /** Builds a {@link PackedTextDataset}; sampling defaults to sequential batches of 1. */
    public static final class Builder extends BaseBuilder<Builder> {

        private int[] tokens;
        private int sequenceLength;
        private int vocabularySize;

        private Builder() {
            setSampling(new BatchSampler(new SequenceSampler(), 1, false));
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * @param tokens the concatenated token ids (see {@link #tokenizeFiles})
         * @return this builder
         */
        public Builder setTokens(int[] tokens) {
            this.tokens = tokens.clone();
            return this;
        }

        /**
         * @param sequenceLength the number of input tokens per record ({@code T})
         * @return this builder
         */
        public Builder setSequenceLength(int sequenceLength) {
            this.sequenceLength = sequenceLength;
            return this;
        }

        /**
         * @param vocabularySize the model's vocabulary size ({@code vocab_size} of its config.json):
         *     {@link #build()} rejects any token id not below it
         * @return this builder
         * @throws IllegalArgumentException if the size is not positive
         */
        public Builder optVocabularySize(int vocabularySize) {
            this.vocabularySize = TokenIdOutOfRangeException.requireVocabularySize(vocabularySize);
            return this;
        }

        /**
         * @return the dataset
         * @throws IllegalArgumentException if tokens or a positive sequence length are missing
         * @throws TokenIdOutOfRangeException if a vocabulary size is set and a token is outside it
         */
        public PackedTextDataset build() {
            if (tokens == null) {
                throw new IllegalArgumentException("no tokens: call setTokens");
            }
            if (sequenceLength < 1) {
                throw new IllegalArgumentException(
                        "sequence length must be at least 1, got " + sequenceLength);
            }
            if (vocabularySize > 0) {
                for (int i = 0; i < tokens.length; i++) {
                    TokenIdOutOfRangeException.check("setTokens, position " + i, tokens[i], vocabularySize);
                }
            }
            return new PackedTextDataset(this);
        }
    }

    /** A growable int buffer for token ids. */
    private static final class TokenBuffer {
        private int[] data = new int[1024];
        private int size;

        void add(long[] ids) {
            if (size + ids.length > data.length) {
                data = Arrays.copyOf(data, Math.max(data.length * 2, size + ids.length));
            }
            for (long id : ids) {
                data[size++] = Math.toIntExact(id);
            }
        }

        int[] toArray() {
            return Arrays.copyOf(data, size);
        }
    }
}
