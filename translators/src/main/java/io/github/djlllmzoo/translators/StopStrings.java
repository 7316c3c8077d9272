package io.github.djlllmzoo.translators;

import java.util.List;

/** Finds stop strings in generated text, and the text that could still become one. */
final class StopStrings {

    private final List<String> stops;
    /** The longest stop string's length: only that many last characters of a text can start one. */
    private final int longest;

    /** @param stops the stop strings (none empty) */
    StopStrings(List<String> stops) {
        this.stops = List.copyOf(stops);
        this.longest = this.stops.stream().mapToInt(String::length).max().orElse(0);
    }

    /** @return whether there are no stop strings */
    boolean isEmpty() {
        return stops.isEmpty();
    }

    /**
     * The earliest position where a stop string starts.
     *
     * @param text the text
     * @param from where to start looking
     * @return the index of the earliest match at or after {@code from}, or -1
     */
    int find(CharSequence text, int from) {
        String tail = text.subSequence(from, text.length()).toString(); // only what is not handed out yet
        int best = -1;
        for (String stop : stops) {
            int at = tail.indexOf(stop);
            if (at >= 0 && (best < 0 || at < best)) {
                best = at;
            }
        }
        return best < 0 ? -1 : from + best;
    }

    /**
     * How much of the end of {@code text} could be the start of a stop string and must be held
     * back.
     *
     * @param text the text
     * @return the length of the longest suffix of {@code text} that is a proper prefix of a stop
     *     string
     */
    int partialMatch(CharSequence text) {
        String tail = text.subSequence(text.length() - Math.min(text.length(), longest), text.length()).toString();
        int best = 0;
        for (String stop : stops) {
            for (int k = Math.min(stop.length() - 1, tail.length()); k > best; k--) {
                if (tail.regionMatches(tail.length() - k, stop, 0, k)) {
                    best = k;
                    break;
                }
            }
        }
        return best;
    }
}
