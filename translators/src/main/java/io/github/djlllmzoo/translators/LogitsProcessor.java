package io.github.djlllmzoo.translators;

/**
 * One step of shaping the next-token logits of one sequence before a token is picked, as Hugging
 * Face's logits processors and warpers do. Works in place on a Java row; a token a processor rules
 * out gets {@link Float#NEGATIVE_INFINITY}. Implementations are stateless and thread-safe.
 */
@FunctionalInterface
public interface LogitsProcessor {

    /**
     * Processes one row of logits in place.
     *
     * @param context the sequence so far (prompt, then generated tokens); only the first {@code
     *     length} entries are valid
     * @param length the number of valid entries of {@code context}
     * @param logits the logits over the vocabulary, modified in place
     */
    void process(long[] context, int length, float[] logits);
}
