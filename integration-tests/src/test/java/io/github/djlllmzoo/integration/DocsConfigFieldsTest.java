package io.github.djlllmzoo.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/models.md's table "What each config.json field does" names every field the config parsers
 * read: each string literal the sources of {@code blocks}' {@code config} package pass to a {@code
 * ConfigJson} accessor ({@code json.optInt("head_dim", …)}) or to a helper taking the json first
 * ({@code positive(json, "vocab_size")}).
 */
class DocsConfigFieldsTest {

    private static final Path PARSERS =
            MarkdownDocs.ROOT.resolve("blocks/src/main/java/io/github/djlllmzoo/blocks/config");
    private static final Pattern FIELD =
            Pattern.compile("(?:[A-Za-z]*[jJ]son\\.[A-Za-z]+\\(\\s*|\\(\\s*[A-Za-z]*[jJ]son\\s*,\\s*)\"([a-z_0-9]+)\"");
    private static final String TABLE = "## What each `config.json` field does";

    @Test
    void everyFieldTheParsersReadIsInTheTable() throws Exception {
        Set<String> read = new TreeSet<>();
        try (Stream<Path> sources = Files.list(PARSERS)) {
            for (Path source : sources.filter(p -> p.toString().endsWith(".java")).toList()) {
                Matcher m = FIELD.matcher(Files.readString(source, StandardCharsets.UTF_8));
                while (m.find()) {
                    read.add(m.group(1));
                }
            }
        }
        assertTrue(read.size() >= 30 && read.contains("vocab_size") && read.contains("hidden_size"),
                "the parsers' fields are found in their sources: " + read);
        String models = MarkdownDocs.read("docs/models.md");
        int start = models.indexOf(TABLE);
        assertTrue(start >= 0, "docs/models.md has the section " + TABLE);
        String table = models.substring(start, models.indexOf("\n## ", start + TABLE.length()));
        List<String> missing = read.stream().filter(f -> !table.contains("`" + f + "`")).toList();
        assertEquals(List.of(), missing, "fields the parsers read that docs/models.md's table does not name");
    }
}
