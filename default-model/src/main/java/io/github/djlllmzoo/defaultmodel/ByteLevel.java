package io.github.djlllmzoo.defaultmodel;

import java.util.regex.Pattern;

/**
 * GPT-2's byte-level pre-tokenization regex, as the Hugging Face {@code ByteLevel} pre-tokenizer
 * applies it; the byte-to-character mapping is {@link io.github.djlllmzoo.constrained.ByteLevelAlphabet}.
 */
final class ByteLevel {

    private ByteLevel() {}

    /**
     * GPT-2's split: English contractions, letter runs, digit runs and other-symbol runs (each with
     * at most one leading space), and whitespace (a run before a non-space keeps its last space for
     * the next word). {@code \s} is Unicode white space, as in the Rust implementation.
     */
    static final Pattern SPLIT =
            Pattern.compile(
                    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
                    Pattern.UNICODE_CHARACTER_CLASS);
}
