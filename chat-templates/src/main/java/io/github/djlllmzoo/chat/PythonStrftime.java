package io.github.djlllmzoo.chat;

import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/**
 * Python's {@code datetime.strftime} in the C locale, for the {@code strftime_now(format)} that
 * Hugging Face gives chat templates (Llama 3.x writes today's date with {@code "%d %b %Y"}). A
 * directive it does not know is refused by name rather than printed wrong.
 */
final class PythonStrftime {

    private PythonStrftime() {}

    /**
     * @param time the moment
     * @param format a Python format, e.g. {@code "%d %b %Y"}
     * @return the formatted text
     * @throws ChatTemplate.RaisedException naming an unsupported directive
     */
    static String format(ZonedDateTime time, String format) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < format.length(); i++) {
            char c = format.charAt(i);
            if (c != '%' || i + 1 == format.length()) {
                out.append(c);
                continue;
            }
            char directive = format.charAt(++i);
            out.append(
                    switch (directive) {
                        case 'a' -> pattern(time, "EEE");
                        case 'A' -> pattern(time, "EEEE");
                        case 'b' -> pattern(time, "MMM");
                        case 'B' -> pattern(time, "MMMM");
                        case 'd' -> pattern(time, "dd");
                        case 'm' -> pattern(time, "MM");
                        case 'y' -> pattern(time, "yy");
                        case 'Y' -> String.valueOf(time.getYear());
                        case 'H' -> pattern(time, "HH");
                        case 'I' -> pattern(time, "hh");
                        case 'p' -> pattern(time, "a").toUpperCase(Locale.ROOT);
                        case 'M' -> pattern(time, "mm");
                        case 'S' -> pattern(time, "ss");
                        case 'j' -> pattern(time, "DDD");
                        case '%' -> "%";
                        default -> throw new ChatTemplate.RaisedException(
                                "strftime_now: the directive %" + directive + " is not supported");
                    });
        }
        return out.toString();
    }

    private static String pattern(ZonedDateTime time, String pattern) {
        return DateTimeFormatter.ofPattern(pattern, Locale.ENGLISH).format(time);
    }
}
