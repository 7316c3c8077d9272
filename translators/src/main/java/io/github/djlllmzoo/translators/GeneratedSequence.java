package io.github.djlllmzoo.translators;

/**
 * The tokens one generation produced.
 *
 * @param tokenIds the new token ids (the prompt excluded; an ending EOS excluded)
 * @param finishReason why generation ended
 */
public record GeneratedSequence(long[] tokenIds, FinishReason finishReason) {}
