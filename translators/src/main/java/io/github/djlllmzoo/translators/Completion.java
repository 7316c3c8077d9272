package io.github.djlllmzoo.translators;

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
 */
public record Completion(String text, long[] tokenIds, FinishReason finishReason, float[] logprobs) {}
