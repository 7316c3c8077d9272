package io.github.djlllmzoo.integration;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The project's documentation as its tests read it: {@code README.md} and every page of {@code docs/},
 * their fenced code blocks (with the {@code <!-- not-tested: reason -->} comment a block may carry on the
 * line before its fence) and their headings' anchors as GitHub makes them.
 */
final class MarkdownDocs {

    /** The project root: the {@code llmzoo.home} property the parent POM sets, else the parent directory. */
    static final Path ROOT = Paths.get(System.getProperty("llmzoo.home", "..")).toAbsolutePath().normalize();

    /** The log of past measurements, kept unchanged: held to its links, not to the rule for code blocks. */
    static final String HISTORY = "docs/performance-history.md";

    // "tested-by: TEST" marks a block that a module's own test checks (it needs that module's class path).
    private static final Pattern NOT_TESTED =
            Pattern.compile("<!-- (?:not-tested: (\\S.*\\S)|tested-by: (\\S.*\\S)) -->");
    private static final Pattern HEADING = Pattern.compile("#{1,6} (.+)");
    private static final Pattern NOT_IN_ANCHOR = Pattern.compile("[^\\p{L}\\p{M}\\p{N}\\p{Pc} -]");

    private MarkdownDocs() {}

    /**
     * A fenced code block.
     *
     * @param file the page, relative to the root
     * @param line the line of its opening fence (1-based)
     * @param language the fence's info string ({@code bash}, {@code java}, or empty)
     * @param body the block's text, ending with a newline
     * @param notTested the reason of its {@code not-tested} comment, if it has one
     */
    record Block(String file, int line, String language, String body, Optional<String> notTested) {
        String where() {
            return file + ":" + line;
        }
    }

    /** @return README.md and docs/*.md, relative to the root, in a fixed order (README first) */
    static List<String> pages() throws IOException {
        List<String> pages = new ArrayList<>(List.of("README.md"));
        try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).map(p -> "docs/" + p.getFileName()).sorted().forEach(pages::add);
        }
        return pages;
    }

    static String read(String page) throws IOException {
        return Files.readString(ROOT.resolve(page), StandardCharsets.UTF_8);
    }

    /** @return the page's fenced code blocks, in order */
    static List<Block> blocks(String page) throws IOException {
        List<String> lines = read(page).lines().toList();
        List<Block> blocks = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            if (!lines.get(i).startsWith("```")) {
                continue;
            }
            int open = i;
            StringBuilder body = new StringBuilder();
            for (i++; i < lines.size() && !lines.get(i).startsWith("```"); i++) {
                body.append(lines.get(i)).append('\n');
            }
            Optional<String> reason = Optional.empty();
            if (open > 0) {
                Matcher m = NOT_TESTED.matcher(lines.get(open - 1).trim());
                if (m.matches()) {
                    reason = Optional.of(m.group(1) != null ? m.group(1) : "tested by " + m.group(2));
                }
            }
            blocks.add(new Block(page, open + 1, lines.get(open).substring(3).trim(), body.toString(), reason));
        }
        return blocks;
    }

    /** @return the page's text outside fenced code blocks, lines kept (so positions stay) */
    static List<String> prose(String page) throws IOException {
        List<String> out = new ArrayList<>();
        boolean inside = false;
        for (String line : read(page).lines().toList()) {
            if (line.startsWith("```")) {
                inside = !inside;
                out.add("");
            } else {
                out.add(inside ? "" : line);
            }
        }
        return out;
    }

    /** @return the anchors GitHub gives the page's headings (a repeated one gets -1, -2, ...) */
    static List<String> anchors(String page) throws IOException {
        List<String> anchors = new ArrayList<>();
        for (String line : prose(page)) {
            Matcher m = HEADING.matcher(line);
            if (!m.matches()) {
                continue;
            }
            String text = m.group(1).strip().replaceAll("\\[([^\\]]*)\\]\\([^)]*\\)", "$1").toLowerCase(java.util.Locale.ROOT);
            String anchor = NOT_IN_ANCHOR.matcher(text).replaceAll("").replace(' ', '-');
            String unique = anchor;
            for (int n = 1; anchors.contains(unique); n++) {
                unique = anchor + "-" + n;
            }
            anchors.add(unique);
        }
        return anchors;
    }

    /** Copies {@code models/default} into {@code work/models/default}, as a reader's checkout has it. */
    static void copyDefaultModel(Path work) throws IOException {
        Path from = ROOT.resolve("models").resolve("default");
        Path to = Files.createDirectories(work.resolve("models").resolve("default"));
        try (Stream<Path> files = Files.list(from)) {
            for (Path file : files.toList()) {
                Files.copy(file, to.resolve(file.getFileName()));
            }
        }
    }
}
