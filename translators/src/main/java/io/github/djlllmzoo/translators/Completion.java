package io.github.djlllmzoo.translators;

import java.util.List;

/**
 * One generated sequence.
 *
 * @param text the new text, ending before a stop string; {@code null} when the model has no
 *     tokenizer
 * @param tokenIds the new token ids (an ending EOS excluded; when a stop string ended the sequence,
 *     up to the token that completed it)
 * @param finishReason why generation ended
 * @param logprobs the natural-log probability of each new token under the model (before any
 *     penalty, temperature or filtering), or {@code null} unless requested
 * @param topLogprobs for each new token, the most likely tokens at its position, most likely first
 *     ({@code topLogprobs} of the config), or {@code null} unless requested
 */
public record Completion(
        String text,
        long[] tokenIds,
        FinishReason finishReason,
        float[] logprobs,
        List<List<TokenLogprob>> topLogprobs) {

    /**
     * A sequence without alternatives.
     *
     * @param text the new text
     * @param tokenIds the new token ids
     * @param finishReason why generation ended
     * @param logprobs each new token's log-probability, or {@code null}
     */
    public Completion(String text, long[] tokenIds, FinishReason finishReason, float[] logprobs) {
        this(text, tokenIds, finishReason, logprobs, null);
    }
}
