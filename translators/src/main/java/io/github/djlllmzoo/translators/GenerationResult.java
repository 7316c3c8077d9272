package io.github.djlllmzoo.translators;

import java.util.List;

/**
 * What one {@link GenerationRequest} produced: one {@link Completion} per returned sequence, and
 * timings. {@link #text()}, {@link #tokenIds()} and {@link #finishReason()} read the first
 * sequence, the only one unless {@code numReturnSequences} was raised.
 *
 * @param completions the sequences, in order
 * @param promptTokens the number of prompt tokens
 * @param timings how long it took
 */
public record GenerationResult(List<Completion> completions, int promptTokens, GenerationTimings timings) {

    /**
     * Copies the list.
     *
     * @param completions the sequences, in order
     * @param promptTokens the number of prompt tokens
     * @param timings how long it took
     */
    public GenerationResult {
        completions = List.copyOf(completions);
    }

    /** @return the text of the first sequence ({@code null} without a tokenizer) */
    public String text() {
        return completions.get(0).text();
    }

    /** @return the new token ids of the first sequence */
    public long[] tokenIds() {
        return completions.get(0).tokenIds();
    }

    /** @return why the first sequence ended */
    public FinishReason finishReason() {
        return completions.get(0).finishReason();
    }
}
