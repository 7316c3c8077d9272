package io.github.djlllmzoo.training;

/**
 * A token id that has no row in the model's embedding: negative, or at least the vocabulary size
 * ({@code vocab_size} of the model's {@code config.json}). Training on it would fail inside the
 * engine with an index error; the message names the id, the vocabulary size and where the id came
 * from (a file, an example, or an argument such as the document separator).
 */
public class TokenIdOutOfRangeException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    private final long tokenId;
    private final int vocabularySize;
    private final String source;

    /**
     * @param source where the id came from, e.g. {@code "notes.txt"} or {@code "the document
     *     separator argument"}
     * @param tokenId the id
     * @param vocabularySize the number of ids the model has
     */
    public TokenIdOutOfRangeException(String source, long tokenId, int vocabularySize) {
        super(source + ": token id " + tokenId + " is outside the vocabulary of " + vocabularySize
                + " ids (0 to " + (vocabularySize - 1) + ")");
        this.tokenId = tokenId;
        this.vocabularySize = vocabularySize;
        this.source = source;
    }

    /**
     * Checks ids against a vocabulary.
     *
     * @param source where the ids came from, for the message
     * @param ids the ids
     * @param vocabularySize the number of ids the model has
     * @throws TokenIdOutOfRangeException naming the first id outside {@code [0, vocabularySize)}
     */
    static void check(String source, long[] ids, int vocabularySize) {
        for (long id : ids) {
            check(source, id, vocabularySize);
        }
    }

    /**
     * Checks one id against a vocabulary.
     *
     * @param source where the id came from, for the message
     * @param id the id
     * @param vocabularySize the number of ids the model has
     * @throws TokenIdOutOfRangeException if the id is outside {@code [0, vocabularySize)}
     */
    static void check(String source, long id, int vocabularySize) {
        if (id < 0 || id >= vocabularySize) {
            throw new TokenIdOutOfRangeException(source, id, vocabularySize);
        }
    }

    /**
     * @param vocabularySize a vocabulary size to check ids against
     * @return the size
     * @throws IllegalArgumentException if it is not positive
     */
    static int requireVocabularySize(int vocabularySize) {
        if (vocabularySize < 1) {
            throw new IllegalArgumentException("vocabulary size must be at least 1, got " + vocabularySize);
        }
        return vocabularySize;
    }

    /** @return the id */
    public long getTokenId() {
        return tokenId;
    }

    /** @return the number of ids the model has */
    public int getVocabularySize() {
        return vocabularySize;
    }

    /** @return where the id came from */
    public String getSource() {
        return source;
    }
}
