package io.github.djlllmzoo.cli;

import java.util.StringJoiner;

/** Parsing and printing comma-separated token ids. */
final class TokenIds {

    private TokenIds() {}

    static long[] parse(String option, String text) {
        String[] parts = text.split(",");
        long[] ids = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            String part = parts[i].trim();
            try {
                ids[i] = Long.parseLong(part);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        option + ": '" + part + "' is not a token id (expected e.g. 1,2,3)", e);
            }
        }
        return ids;
    }

    static String join(long[] ids) {
        StringJoiner joiner = new StringJoiner(",");
        for (long id : ids) {
            joiner.add(Long.toString(id));
        }
        return joiner.toString();
    }
}
