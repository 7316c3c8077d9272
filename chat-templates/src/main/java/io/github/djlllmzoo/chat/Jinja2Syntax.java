package io.github.djlllmzoo.chat;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Rewrites a Jinja2 template into one Jinjava renders the same way, for what Jinjava's lexer and
 * expression parser do differently from Jinja2's:
 *
 * <ul>
 *   <li>whitespace control: Jinja2's {@code -} on any tag ({@code {{- x -}}} included), {@code
 *       trim_blocks}, {@code lstrip_blocks} and the dropped final newline ({@code
 *       keep_trailing_newline = False}) are applied here, lexically, as Jinja2's lexer applies
 *       them; the result has no whitespace markers and comments are gone, so Jinjava renders it
 *       with its own trimming off;
 *   <li>the reversing slice {@code x[::-1]}, which Jinjava's parser rejects, becomes {@code
 *       (x|reverse|list)};
 *   <li>keyword arguments of {@code namespace(...)} are parenthesized, since Jinjava binds {@code
 *       name=a - 1} as {@code (name=a) - 1};
 *   <li>{@code {% for x in items if condition %}}, whose condition Jinjava ignores, first
 *       collects the items that pass into a list of its own, then loops over that list, so that
 *       {@code loop.index}, {@code loop.last} and {@code else} count only those, as in Jinja2;
 *   <li>{@code {% raw %}} blocks are kept verbatim, with Jinja2's whitespace control around
 *       them (no {@code trim_blocks} after {@code raw}, as Jinja2's lexer does);
 *   <li>a unary {@code not} takes in what follows it up to the next {@code and}, {@code or},
 *       {@code if}, {@code else}, comma or closing bracket, as in Jinja2, where {@code not
 *       x|length == 1} is {@code not (x|length == 1)} (Jinjava's {@code not} binds tighter than
 *       comparisons);
 *   <li>{@code }}} closing nested dicts becomes {@code } }}, which Jinjava's lexer would take for
 *       the end of the tag;
 *   <li>every output tag prints its value as Jinja2 does ({@link PythonStr}), one holding a dict
 *       literal through a variable, since Jinjava reads {@code ({'a': 1, 'b': 2})} as a tuple.
 * </ul>
 */
final class Jinja2Syntax {

    /** {@code name}, {@code a.b} or {@code a['k'][0]}, then {@code [::-1]}. */
    private static final Pattern REVERSED =
            Pattern.compile(
                    "([A-Za-z_][\\w.]*(?:\\[[^\\[\\]]*\\])*)\\[\\s*:\\s*:\\s*-\\s*1\\s*\\]");

    /** The function every output tag goes through: Jinja2's {@code str()} ({@link PythonStr}). */
    static final String PRINT = "__jinja2_str";

    private static final Pattern NAMESPACE_CALL = Pattern.compile("\\bnamespace\\s*\\(");

    /** The head of a for tag: its targets and where the iterable starts. */
    private static final Pattern FOR_HEAD =
            Pattern.compile("for\\s+([A-Za-z_]\\w*(?:\\s*,\\s*[A-Za-z_]\\w*)*)\\s+in\\s");

    /** The tag closing a raw block, with its whitespace markers. */
    private static final Pattern END_RAW = Pattern.compile("\\{%([-+]?)\\s*endraw\\s*([-+]?)%\\}");

    /** The prefix of the lists {@code for ... if} loops collect their items in. */
    private static final String FILTERED = "__jinja2_for_";

    private static final String RAW = "raw";

    /** The variable an output tag holding a dict literal is evaluated into. */
    private static final String VALUE = "__jinja2_value";

    private enum Kind {
        TEXT,
        VARIABLE,
        BLOCK,
        COMMENT
    }

    /** A piece of the template: text, or a tag with its body and whitespace markers. */
    private static final class Piece {
        final Kind kind;
        String text;
        final char open;
        final char close;
        /** Where a text piece starts in the source, after what the tag before it consumed. */
        int start;

        Piece(Kind kind, String text, char open, char close, int start) {
            this.kind = kind;
            this.text = text;
            this.open = open;
            this.close = close;
            this.start = start;
        }
    }

    private Jinja2Syntax() {}

    /**
     * @param source a Jinja2 template
     * @return the same template for Jinjava with trimming off
     * @throws IllegalArgumentException naming an unclosed tag
     */
    static String toJinjava(String source) {
        String src = source.replace("\r\n", "\n");
        if (src.endsWith("\n")) {
            src = src.substring(0, src.length() - 1);
        }
        List<Piece> pieces = lex(src);
        for (int i = 0; i < pieces.size(); i++) {
            Piece tag = pieces.get(i);
            if (tag.kind == Kind.TEXT) {
                continue;
            }
            Piece before = i > 0 && pieces.get(i - 1).kind == Kind.TEXT ? pieces.get(i - 1) : null;
            Piece after =
                    i + 1 < pieces.size() && pieces.get(i + 1).kind == Kind.TEXT
                            ? pieces.get(i + 1)
                            : null;
            boolean block = tag.kind == Kind.BLOCK || tag.kind == Kind.COMMENT;
            if (before != null) {
                if (tag.open == '-') {
                    before.text = before.text.stripTrailing();
                } else if (block && tag.open != '+') {
                    int lineStart = before.text.lastIndexOf('\n') + 1;
                    boolean lineStarting =
                            before.start == 0 || src.charAt(before.start - 1) == '\n';
                    String indent = before.text.substring(lineStart);
                    if ((lineStart > 0 || lineStarting)
                            && indent.chars().allMatch(c -> c == ' ' || c == '\t')) {
                        before.text = before.text.substring(0, lineStart);
                    }
                }
            }
            if (after != null) {
                String kept =
                        tag.close == '-'
                                ? after.text.stripLeading()
                                : block
                                                && tag.close != '+'
                                                && !(tag.kind == Kind.BLOCK && RAW.equals(tag.text))
                                                && after.text.startsWith("\n")
                                        ? after.text.substring(1)
                                        : after.text;
                after.start += after.text.length() - kept.length();
                after.text = kept;
            }
        }
        StringBuilder out = new StringBuilder(src.length());
        int filteredLoops = 0;
        for (Piece piece : pieces) {
            switch (piece.kind) {
                case TEXT -> out.append(piece.text);
                case VARIABLE -> {
                    String body = rewrite(piece.text);
                    if (dictLiteral(body)) {
                        // Jinjava reads a parenthesized dict of several keys as a one-item tuple
                        out.append("{% set " + VALUE + " = ").append(body).append(" %}")
                                .append("{{ " + PRINT + "(" + VALUE + ") }}");
                    } else {
                        out.append("{{ " + PRINT + "((").append(body).append(")) }}");
                    }
                }
                case BLOCK -> {
                    String body = rewrite(piece.text);
                    String filtered = filteredFor(body, FILTERED + filteredLoops);
                    if (filtered != null) {
                        filteredLoops++;
                        out.append(filtered);
                    } else {
                        out.append("{% ").append(body).append(" %}");
                    }
                }
                case COMMENT -> {}
            }
        }
        return out.toString();
    }

    /**
     * {@code for x in items if condition} as two loops, the first collecting the items that pass
     * into {@code list}, the second (left open for the body) over them; {@code null} for any other
     * tag. A loop over several targets collects them as a list, which Jinjava unpacks again.
     */
    private static String filteredFor(String body, String list) {
        Matcher head = FOR_HEAD.matcher(body);
        if (!head.lookingAt()) {
            return null;
        }
        int condition = topLevelKeyword(body, head.end(), "if");
        if (condition < 0) {
            return null;
        }
        String targets = head.group(1).strip();
        String items = body.substring(head.end(), condition).strip();
        String test = body.substring(condition + 2).strip();
        if (test.endsWith(" recursive") || test.isEmpty()) {
            return null;
        }
        String item = targets.contains(",") ? "[" + targets + "]" : targets;
        return "{% set " + list + " = [] %}"
                + "{% for " + targets + " in " + items + " %}{% if " + test + " %}"
                + "{% do " + list + ".append(" + item + ") %}{% endif %}{% endfor %}"
                + "{% for " + targets + " in " + list + " %}";
    }

    /** Whether the expression holds a dict literal: a brace outside strings. */
    private static boolean dictLiteral(String body) {
        for (int i = 0; i < body.length(); i++) {
            char c = body.charAt(i);
            if (c == '\'' || c == '"') {
                i = stringEnd(body, i);
            } else if (c == '{') {
                return true;
            }
        }
        return false;
    }

    /** Where the word {@code keyword} starts outside strings and brackets, from {@code from}. */
    private static int topLevelKeyword(String body, int from, String keyword) {
        int depth = 0;
        for (int i = from; i < body.length(); i++) {
            char c = body.charAt(i);
            if (c == '\'' || c == '"') {
                i = stringEnd(body, i);
            } else if (c == '(' || c == '[' || c == '{') {
                depth++;
            } else if (c == ')' || c == ']' || c == '}') {
                depth--;
            } else if (depth == 0
                    && body.startsWith(keyword, i)
                    && (i == 0 || !isNameChar(body.charAt(i - 1)))
                    && (i + keyword.length() == body.length()
                            || !isNameChar(body.charAt(i + keyword.length())))) {
                return i;
            }
        }
        return -1;
    }

    private static boolean isNameChar(char c) {
        return Character.isLetterOrDigit(c) || c == '_' || c == '.';
    }

    /** Splits the source into text and tags, a tag's body without its delimiters and markers. */
    private static List<Piece> lex(String src) {
        List<Piece> pieces = new ArrayList<>();
        int pos = 0;
        while (pos < src.length()) {
            int start = nextTag(src, pos);
            if (start < 0) {
                pieces.add(new Piece(Kind.TEXT, src.substring(pos), ' ', ' ', pos));
                break;
            }
            if (start > pos) {
                pieces.add(new Piece(Kind.TEXT, src.substring(pos, start), ' ', ' ', pos));
            }
            char type = src.charAt(start + 1);
            Kind kind = type == '{' ? Kind.VARIABLE : type == '%' ? Kind.BLOCK : Kind.COMMENT;
            String closer = type == '{' ? "}}" : type == '%' ? "%}" : "#}";
            int bodyStart = start + 2;
            char open = ' ';
            if (bodyStart < src.length()
                    && (src.charAt(bodyStart) == '-' || src.charAt(bodyStart) == '+')) {
                open = src.charAt(bodyStart);
                bodyStart++;
            }
            int closeAt =
                    kind == Kind.COMMENT
                            ? src.indexOf(closer, bodyStart)
                            : closingOutsideStrings(src, bodyStart, closer);
            if (closeAt < 0) {
                throw new IllegalArgumentException(
                        "the chat template has an unclosed '"
                                + src.substring(start, start + 2)
                                + "' at character "
                                + start);
            }
            int bodyEnd = closeAt;
            char close = ' ';
            if (bodyEnd > bodyStart
                    && (src.charAt(bodyEnd - 1) == '-' || src.charAt(bodyEnd - 1) == '+')) {
                close = src.charAt(bodyEnd - 1);
                bodyEnd--;
            }
            String body = src.substring(bodyStart, bodyEnd).strip();
            pieces.add(new Piece(kind, body, open, close, start));
            pos = closeAt + 2;
            if (kind == Kind.BLOCK && RAW.equals(body)) {
                Matcher end = END_RAW.matcher(src);
                if (!end.find(pos)) {
                    throw new IllegalArgumentException(
                            "the chat template has a '{% raw %}' without '{% endraw %}' at"
                                    + " character "
                                    + start);
                }
                pieces.add(new Piece(Kind.TEXT, src.substring(pos, end.start()), ' ', ' ', pos));
                char endOpen = end.group(1).isEmpty() ? ' ' : end.group(1).charAt(0);
                char endClose = end.group(2).isEmpty() ? ' ' : end.group(2).charAt(0);
                pieces.add(new Piece(Kind.BLOCK, "endraw", endOpen, endClose, end.start()));
                pos = end.end();
            }
        }
        return pieces;
    }

    private static int nextTag(String src, int from) {
        for (int i = src.indexOf('{', from);
                i >= 0 && i + 1 < src.length();
                i = src.indexOf('{', i + 1)) {
            char c = src.charAt(i + 1);
            if (c == '{' || c == '%' || c == '#') {
                return i;
            }
        }
        return -1;
    }

    /** The tag's closer: the first outside strings and brackets, balanced as in Jinja2. */
    private static int closingOutsideStrings(String src, int from, String closer) {
        int depth = 0;
        for (int i = from; i < src.length(); i++) {
            char c = src.charAt(i);
            if (c == '\'' || c == '"') {
                i = stringEnd(src, i);
            } else if (depth == 0 && src.startsWith(closer, i)) {
                return i;
            } else if (c == '(' || c == '[' || c == '{') {
                depth++;
            } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
                depth--;
            }
        }
        return -1;
    }

    /** The index of the quote closing the string literal opened at {@code quoteAt}. */
    private static int stringEnd(String s, int quoteAt) {
        char quote = s.charAt(quoteAt);
        for (int i = quoteAt + 1; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\') {
                i++;
            } else if (c == quote) {
                return i;
            }
        }
        return s.length();
    }

    /** The expression rewrites, outside string literals. */
    private static String rewrite(String body) {
        StringBuilder out = new StringBuilder(body.length());
        int codeStart = 0;
        for (int i = 0; i < body.length(); i++) {
            char c = body.charAt(i);
            if (c == '\'' || c == '"') {
                out.append(rewriteCode(body.substring(codeStart, i)));
                codeStart = Math.min(stringEnd(body, i) + 1, body.length());
                out.append(body, i, codeStart);
                i = codeStart - 1;
            }
        }
        out.append(rewriteCode(body.substring(codeStart)));
        return parenthesizeNot(parenthesizeNamespaceArguments(out.toString()));
    }

    /** Words after which a {@code not} is unary (after an operand it is {@code not in}). */
    private static final List<String> BEFORE_UNARY_NOT =
            List.of("and", "or", "not", "if", "elif", "else");

    /** Words that end the operand of a unary {@code not}. */
    private static final List<String> AFTER_NOT_OPERAND = List.of("and", "or", "if", "else");

    /** {@code not a == b and c} becomes {@code not (a == b) and c}, outside string literals. */
    private static String parenthesizeNot(String body) {
        StringBuilder out = new StringBuilder(body.length() + 8);
        int i = 0;
        while (i < body.length()) {
            char c = body.charAt(i);
            if (c == '\'' || c == '"') {
                int end = Math.min(stringEnd(body, i) + 1, body.length());
                out.append(body, i, end);
                i = end;
            } else if (wordAt(body, i, "not") && unaryContext(body, i)) {
                int start = i + 3;
                int end = notOperandEnd(body, start);
                out.append("not (")
                        .append(parenthesizeNot(body.substring(start, end).strip()))
                        .append(')');
                if (end < body.length() && !Character.isWhitespace(body.charAt(end))) {
                    out.append(' ');
                }
                i = end;
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    private static boolean wordAt(String s, int at, String word) {
        return s.startsWith(word, at)
                && (at == 0 || !isNameChar(s.charAt(at - 1)))
                && (at + word.length() == s.length() || !isNameChar(s.charAt(at + word.length())));
    }

    /** Whether what precedes {@code at} leaves room for an operand, so a {@code not} there is unary. */
    private static boolean unaryContext(String s, int at) {
        int j = at - 1;
        while (j >= 0 && Character.isWhitespace(s.charAt(j))) {
            j--;
        }
        if (j < 0 || "([{,=:".indexOf(s.charAt(j)) >= 0) {
            return true;
        }
        int wordEnd = j + 1;
        while (j >= 0 && isNameChar(s.charAt(j))) {
            j--;
        }
        return BEFORE_UNARY_NOT.contains(s.substring(j + 1, wordEnd));
    }

    /** Where the operand of a unary {@code not} starting at {@code from} ends. */
    private static int notOperandEnd(String s, int from) {
        int depth = 0;
        for (int i = from; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\'' || c == '"') {
                i = stringEnd(s, i);
            } else if (c == '(' || c == '[' || c == '{') {
                depth++;
            } else if (c == ')' || c == ']' || c == '}') {
                if (depth == 0) {
                    return i;
                }
                depth--;
            } else if (depth == 0 && c == ',') {
                return i;
            } else if (depth == 0 && (i == from || !isNameChar(s.charAt(i - 1)))) {
                for (String word : AFTER_NOT_OPERAND) {
                    if (wordAt(s, i, word)) {
                        return i;
                    }
                }
            }
        }
        return s.length();
    }

    private static String rewriteCode(String code) {
        // Jinjava's lexer ends a tag at the first closer outside strings, a nested dict's "}}" too
        return REVERSED.matcher(code)
                .replaceAll("($1|reverse|list)")
                .replace("}}", "} }")
                .replace("}}", "} }");
    }

    /** {@code namespace(a=x, b=y - 1)} becomes {@code namespace(a=(x), b=(y - 1))}. */
    private static String parenthesizeNamespaceArguments(String body) {
        Matcher m = NAMESPACE_CALL.matcher(body);
        StringBuilder out = new StringBuilder();
        int pos = 0;
        while (m.find(pos)) {
            out.append(body, pos, m.end());
            int depth = 0;
            int argStart = m.end();
            int i = m.end();
            for (; i < body.length(); i++) {
                char c = body.charAt(i);
                if (c == '\'' || c == '"') {
                    i = stringEnd(body, i);
                } else if (c == '(' || c == '[' || c == '{') {
                    depth++;
                } else if ((c == ')' || c == ',') && depth == 0) {
                    out.append(keywordArgument(body.substring(argStart, i))).append(c);
                    argStart = i + 1;
                    if (c == ')') {
                        break;
                    }
                } else if (c == ')' || c == ']' || c == '}') {
                    depth--;
                }
            }
            pos = Math.min(i + 1, body.length());
            if (i >= body.length()) {
                out.append(body, argStart, body.length());
            }
        }
        return out.append(body.substring(pos)).toString();
    }

    private static String keywordArgument(String argument) {
        int eq = argument.indexOf('=');
        if (eq <= 0
                || argument.startsWith("=", eq + 1)
                || !argument.substring(0, eq).strip().matches("[A-Za-z_]\\w*")) {
            return argument;
        }
        return argument.substring(0, eq + 1) + "(" + argument.substring(eq + 1).strip() + ")";
    }
}
