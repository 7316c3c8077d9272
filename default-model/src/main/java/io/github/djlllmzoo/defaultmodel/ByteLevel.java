package io.github.djlllmzoo.defaultmodel;

import java.util.regex.Pattern;

/**
 * GPT-2's byte-level conventions, as the Hugging Face {@code ByteLevel} pre-tokenizer and decoder
 * apply them: the pre-tokenization regex and the reversible byte-to-character mapping.
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

    /**
     * The bytes in alphabet order: the printable Latin-1 bytes (which map to themselves) first, then
     * the others, which map to U+0100 and up. This is also the order of their characters' code
     * points, and of ids 0..255 in GPT-2's vocabulary.
     */
    static final int[] BYTES_IN_ORDER = new int[256];

    /** The character each byte stands for. */
    static final char[] BYTE_TO_CHAR = new char[256];

    /** Position of each byte in {@link #BYTES_IN_ORDER}. */
    static final int[] BYTE_RANK = new int[256];

    static {
        int n = 0;
        boolean[] printable = new boolean[256];
        for (int b = 0; b < 256; b++) {
            printable[b] = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        }
        for (int b = 0; b < 256; b++) {
            if (printable[b]) {
                BYTE_TO_CHAR[b] = (char) b;
                BYTES_IN_ORDER[n++] = b;
            }
        }
        int extra = 0;
        for (int b = 0; b < 256; b++) {
            if (!printable[b]) {
                BYTE_TO_CHAR[b] = (char) (256 + extra++);
                BYTES_IN_ORDER[n++] = b;
            }
        }
        for (int i = 0; i < 256; i++) {
            BYTE_RANK[BYTES_IN_ORDER[i]] = i;
        }
    }
}
