package io.github.djlllmzoo.constrained;

/**
 * GPT-2's reversible byte-to-character mapping, as the Hugging Face {@code ByteLevel}
 * pre-tokenizer and decoder apply it: the printable Latin-1 bytes stand for themselves, the other
 * bytes for U+0100 and up, so every byte-level BPE token is a string of these characters.
 */
public final class ByteLevelAlphabet {

    private static final int[] BYTES_IN_ORDER = new int[256];
    private static final char[] BYTE_TO_CHAR = new char[256];
    private static final int[] BYTE_RANK = new int[256];
    private static final int[] CHAR_TO_BYTE = new int[512];

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
        java.util.Arrays.fill(CHAR_TO_BYTE, -1);
        for (int i = 0; i < 256; i++) {
            BYTE_RANK[BYTES_IN_ORDER[i]] = i;
            CHAR_TO_BYTE[BYTE_TO_CHAR[i]] = i;
        }
    }

    private ByteLevelAlphabet() {}

    /**
     * @param b a byte, 0..255
     * @return the character that stands for it
     */
    public static char charOf(int b) {
        return BYTE_TO_CHAR[b];
    }

    /**
     * @param rank a position in the alphabet, 0..255 (also the id of that byte's token in GPT-2)
     * @return the byte at that position: printable Latin-1 bytes first, then the others
     */
    public static int byteAt(int rank) {
        return BYTES_IN_ORDER[rank];
    }

    /**
     * @param b a byte, 0..255
     * @return its position in the alphabet
     */
    public static int rankOf(int b) {
        return BYTE_RANK[b];
    }

    /**
     * The bytes a byte-level token stands for.
     *
     * @param token the token's text in the alphabet
     * @return its bytes, or {@code null} when a character is outside the alphabet
     */
    public static byte[] decode(String token) {
        byte[] out = new byte[token.length()];
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            int b = c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
            if (b < 0) {
                return null;
            }
            out[i] = (byte) b;
        }
        return out;
    }
}
