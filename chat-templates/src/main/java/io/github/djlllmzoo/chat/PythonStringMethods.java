package io.github.djlllmzoo.chat;

import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * Python's {@code str} methods on strings in a template, as chat templates call them ({@code
 * content.strip('\n')}, {@code content.split('</think>')}, {@code role.startswith('x')}), with
 * Python's semantics where Java's same-named methods differ ({@code split} takes a separator, not
 * a regular expression; {@code strip} takes the characters to remove), and indexing a string by
 * character ({@code s[0]}, {@code s[-1]}; out of range is undefined, printing nothing), which
 * Jinjava does not do. Resolves nothing else.
 */
final class PythonStringMethods extends ELResolver {

    private static final Pattern INDEX = Pattern.compile("-?\\d{1,18}");

    @Override
    public Object invoke(
            ELContext context, Object base, Object method, Class<?>[] types, Object[] params) {
        if (!(base instanceof String s) || method == null) {
            return null;
        }
        Object[] args = params == null ? new Object[0] : params;
        Object result = call(s, method.toString(), args);
        if (result != null) {
            context.setPropertyResolved(true);
        }
        return result;
    }

    private static Object call(String s, String name, Object[] args) {
        String arg = args.length > 0 && args[0] != null ? args[0].toString() : null;
        switch (name) {
            case "strip":
                return args.length <= 1 ? rstrip(lstrip(s, arg), arg) : null;
            case "lstrip":
                return args.length <= 1 ? lstrip(s, arg) : null;
            case "rstrip":
                return args.length <= 1 ? rstrip(s, arg) : null;
            case "startswith":
                return args.length == 1 && arg != null ? s.startsWith(arg) : null;
            case "endswith":
                return args.length == 1 && arg != null ? s.endsWith(arg) : null;
            case "split":
                return args.length <= 1 ? split(s, arg) : null;
            case "upper":
                return args.length == 0 ? s.toUpperCase(Locale.ROOT) : null;
            case "lower":
                return args.length == 0 ? s.toLowerCase(Locale.ROOT) : null;
            case "title":
                return args.length == 0 ? title(s) : null;
            case "replace":
                return args.length == 2 && arg != null && args[1] != null
                        ? s.replace(arg, args[1].toString())
                        : null;
            default:
                return null;
        }
    }

    /** Python's whitespace: {@code str.isspace()} for the characters chat text holds. */
    private static boolean removable(char c, String chars) {
        return chars == null
                ? Character.isWhitespace(c) || Character.isSpaceChar(c)
                : chars.indexOf(c) >= 0;
    }

    private static String lstrip(String s, String chars) {
        int i = 0;
        while (i < s.length() && removable(s.charAt(i), chars)) {
            i++;
        }
        return s.substring(i);
    }

    private static String rstrip(String s, String chars) {
        int i = s.length();
        while (i > 0 && removable(s.charAt(i - 1), chars)) {
            i--;
        }
        return s.substring(0, i);
    }

    private static List<String> split(String s, String separator) {
        List<String> parts = new ArrayList<>();
        if (separator == null) {
            for (String part : s.strip().split("\\s+")) {
                if (!part.isEmpty()) {
                    parts.add(part);
                }
            }
            return parts;
        }
        if (separator.isEmpty()) {
            throw new IllegalArgumentException("empty separator");
        }
        int from = 0;
        for (int at = s.indexOf(separator); at >= 0; at = s.indexOf(separator, from)) {
            parts.add(s.substring(from, at));
            from = at + separator.length();
        }
        parts.add(s.substring(from));
        return parts;
    }

    private static String title(String s) {
        StringBuilder out = new StringBuilder(s.length());
        boolean previousCased = false;
        for (char c : s.toCharArray()) {
            out.append(previousCased ? Character.toLowerCase(c) : Character.toUpperCase(c));
            previousCased = Character.isLetter(c);
        }
        return out.toString();
    }

    @Override
    public Object getValue(ELContext context, Object base, Object property) {
        // Jinjava hands the index over as text ("0", "-1")
        if (!(base instanceof String s)
                || property == null
                || !INDEX.matcher(property.toString()).matches()) {
            return null;
        }
        context.setPropertyResolved(true);
        int length = s.codePointCount(0, s.length());
        long index = Long.parseLong(property.toString());
        long at = index < 0 ? index + length : index;
        if (at < 0 || at >= length) {
            return null;
        }
        int start = s.offsetByCodePoints(0, (int) at);
        return s.substring(start, s.offsetByCodePoints(start, 1));
    }

    @Override
    public Class<?> getType(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public void setValue(ELContext context, Object base, Object property, Object value) {}

    @Override
    public boolean isReadOnly(ELContext context, Object base, Object property) {
        return true;
    }

    @Override
    public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
        return null;
    }

    @Override
    public Class<?> getCommonPropertyType(ELContext context, Object base) {
        return null;
    }
}
