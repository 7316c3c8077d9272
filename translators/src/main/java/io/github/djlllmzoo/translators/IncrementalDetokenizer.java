package io.github.djlllmzoo.translators;

import java.util.Arrays;

/**
 * Turns one sequence's tokens into text as they arrive. Each step decodes the whole output so far
 * and hands out only the new suffix that is safe to show: never a trailing U+FFFD (the bytes of a
 * character split across byte-level tokens, not yet complete) and never text that could be the
 * start of a stop string. Stops at the first stop string; the text ends before it.
 */
final class IncrementalDetokenizer {

    private static final char REPLACEMENT = '\uFFFD';

    private final TextTokenizer tokenizer;
    private final StopStrings stops;
    private long[] ids = new long[16];
    private int count;
    private String text = "";
    private int emitted;
    private int stopAt = -1;

    /**
     * @param tokenizer the tokenizer
     * @param stops the stop strings (may be empty)
     */
    IncrementalDetokenizer(TextTokenizer tokenizer, StopStrings stops) {
        this.tokenizer = tokenizer;
        this.stops = stops;
    }

    /**
     * Adds a token.
     *
     * @param tokenId the token
     * @return the new text safe to show (possibly empty)
     */
    String accept(long tokenId) {
        if (stopAt >= 0) {
            throw new IllegalStateException("the sequence already reached a stop string");
        }
        if (count == ids.length) {
            ids = Arrays.copyOf(ids, count * 2);
        }
        ids[count++] = tokenId;
        text = tokenizer.decode(Arrays.copyOf(ids, count));
        if (!stops.isEmpty()) {
            // text already handed out holds no stop string and cannot start one
            stopAt = stops.find(text, emitted);
        }
        int end;
        if (stopAt >= 0) {
            end = stopAt;
        } else {
            end = text.length() - stops.partialMatch(text);
            while (end > emitted && text.charAt(end - 1) == REPLACEMENT) {
                end--;
            }
        }
        return take(end);
    }

    /** @return whether the text reached a stop string */
    boolean stopped() {
        return stopAt >= 0;
    }

    /**
     * Ends the sequence: hands out everything not yet shown (held-back text included, up to a stop
     * string).
     *
     * @return the rest of the text (possibly empty)
     */
    String finish() {
        return take(text().length());
    }

    /** @return the text so far, ending before the stop string when one was reached */
    String text() {
        return stopAt >= 0 ? text.substring(0, stopAt) : text;
    }

    private String take(int end) {
        if (end <= emitted) {
            return "";
        }
        String piece = text.substring(emitted, end);
        emitted = end;
        return piece;
    }
}
