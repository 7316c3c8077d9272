package io.github.djlllmzoo.translators;

/**
 * A token with its natural-log probability under the model at one position.
 *
 * @param tokenId the token id
 * @param logprob {@code log softmax(logits)[tokenId]}, before any penalty, temperature or filtering
 */
public record TokenLogprob(long tokenId, float logprob) {}
