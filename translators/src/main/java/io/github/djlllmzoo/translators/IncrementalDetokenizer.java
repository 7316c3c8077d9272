package io.github.djlllmzoo.translators;

import java.util.Arrays;
import java.util.function.Function;

/**
 * Turns one sequence's tokens into text as they arrive and hands out only the new suffix that is
 * safe to show: never a trailing U+FFFD (the bytes of a character split across byte-level tokens, not
 * yet complete) and never text that could be the start of a stop string. Stops at the first stop
 * string; the text ends before it.
 *
 * <p>A step decodes a short window of the last tokens rather than the whole output, so a token costs
 * the same at the 4,000th as at the first (decoding everything each step made a long answer's tokens
 * cost time in proportion to its length): the window starts a few tokens back, where the text was last
 * complete, and both it and the same window without the new tokens are decoded, so that what a
 * decoder does to a text's first token (SentencePiece drops its leading space) happens to both and
 * the difference is the new text. As vLLM's incremental detokenization does. A tokenizer whose window
 * is not a prefix of the longer one (a decoder that rewrites earlier text) is decoded whole each step.
 */
final class IncrementalDetokenizer {

    private static final char REPLACEMENT = '\uFFFD';

    private final Function<long[], String> decoder;
    private final StopStrings stops;
    private long[] ids = new long[16];
    private int count;
    /** The text of the tokens before {@link #readOffset}. */
    private final StringBuilder text = new StringBuilder();
    /** Where the window decoded each step starts. */
    private int prefixOffset;
    /** Tokens whose text is in {@link #text}. */
    private int readOffset;
    /** The window's text up to {@link #readOffset}: the part of the window already in {@link #text}. */
    private String prefixText = "";
    /** Whether this tokenizer's windows failed to extend each other: every step decodes all tokens. */
    private boolean whole;
    private int emitted;
    private int stopAt = -1;

    /**
     * @param tokenizer the tokenizer
     * @param stops the stop strings (may be empty)
     */
    IncrementalDetokenizer(TextTokenizer tokenizer, StopStrings stops) {
        this(tokenizer::decode, stops);
    }

    /**
     * @param decoder token ids to text, as the tokenizer decodes them
     * @param stops the stop strings (may be empty)
     */
    IncrementalDetokenizer(Function<long[], String> decoder, StopStrings stops) {
        this.decoder = decoder;
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
        extend(false);
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

    /**
     * Decodes the tokens not yet in the text. Where their last character is incomplete (the window
     * ends in U+FFFD) they wait for the next token, unless {@code last}.
     */
    private void extend(boolean last) {
        if (whole) {
            text.setLength(0);
            text.append(decode(0, count));
            readOffset = count;
        } else {
            String window = decode(prefixOffset, count);
            if (!window.startsWith(prefixText)) {
                whole = true;
                extend(last);
                return;
            }
            if (!last && window.length() > prefixText.length() && window.charAt(window.length() - 1) == REPLACEMENT) {
                return;
            }
            text.append(window, prefixText.length(), window.length());
            prefixOffset = readOffset;
            readOffset = count;
            prefixText = decode(prefixOffset, readOffset);
        }
        if (stopAt < 0 && !stops.isEmpty()) {
            // text already handed out holds no stop string and cannot start one
            stopAt = stops.find(text, emitted);
        }
    }

    private String decode(int from, int to) {
        return from == to ? "" : decoder.apply(Arrays.copyOfRange(ids, from, to));
    }

    /** @return whether the text reached a stop string */
    boolean stopped() {
        return stopAt >= 0;
    }

    /**
     * Ends the sequence: hands out what was held back (an incomplete character's U+FFFD, text that
     * could have started a stop string), up to a stop string.
     *
     * @return the rest of the text
     */
    String finish() {
        if (stopAt < 0 && readOffset < count) {
            extend(true);
        }
        return take(text().length());
    }

    /** @return the whole text so far, ending before a stop string */
    String text() {
        return stopAt >= 0 ? text.substring(0, stopAt) : text.toString();
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
