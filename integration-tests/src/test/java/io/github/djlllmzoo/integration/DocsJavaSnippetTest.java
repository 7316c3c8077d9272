package io.github.djlllmzoo.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.defaultmodel.StoryCorpus;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Compiles and runs every Java snippet of README.md and docs/ (each {@code java} block without a
 * {@code not-tested} comment) exactly as written: each with only the imports it shows (all of them
 * used), each in its own JVM whose working directory holds a copy of {@code models/default} and a
 * {@code notes.txt}, as the project root would for a reader. The documented API, its imports and
 * the fine-tuning recipe cannot drift.
 */
class DocsJavaSnippetTest {

    private static final Path ROOT = MarkdownDocs.ROOT;
    private static final Pattern IMPORT = Pattern.compile("import (static )?([\\w.]+)\\.(\\w+);");

    @TempDir Path tmp;

    @Test
    void everySnippetCompilesWithTheImportsItShowsAndRuns() throws Exception {
        List<Snippet> snippets = snippets();
        assertTrue(snippets.stream().anyMatch(s -> s.where().startsWith("README.md")), "the README's quick start is run");
        assertTrue(snippets.size() >= 5, "the Criteria, LocalModel, streaming and fine-tuning snippets are run: " + snippets);
        Path classes = compile(snippets);

        Path work = Files.createDirectories(tmp.resolve("work"));
        MarkdownDocs.copyDefaultModel(work);
        Files.writeString(work.resolve("notes.txt"), new StoryCorpus(5).generate(150), StandardCharsets.UTF_8);
        for (Snippet snippet : snippets) {
            String output = run(snippet, classes, work);
            assertFalse(output.isBlank(), snippet.where() + " prints its result:\n" + snippet.source());
        }
        // The fine-tuning snippet leaves a checkpoint the library loads again.
        List<Path> written;
        try (Stream<Path> dirs = Files.list(work)) {
            written = dirs.filter(d -> Files.isRegularFile(d.resolve("config.json"))).toList();
        }
        assertEquals(1, written.size(), "one fine-tuned checkpoint: " + written);
        try (LocalModel tuned = LocalModel.load(written.get(0))) {
            assertFalse(tuned.tokenizer().decode(tuned.tokenizer().encode("Once")).isBlank());
        }
    }

    /** A documentation snippet: where it is, its import lines and the statements after them. */
    private record Snippet(String where, String className, List<String> imports, String body) {
        String source() {
            return String.join("\n", imports) + "\npublic class " + className + " {\n"
                    + "  public static void main(String[] args) throws Exception {\n" + body + "\n  }\n}\n";
        }
    }

    private static List<Snippet> snippets() throws Exception {
        List<Snippet> snippets = new ArrayList<>();
        for (String page : MarkdownDocs.pages()) {
            if (page.equals(MarkdownDocs.HISTORY)) {
                continue;
            }
            for (MarkdownDocs.Block block : MarkdownDocs.blocks(page)) {
                if (block.language().equals("java") && block.notTested().isEmpty()) {
                    snippets.add(snippet(block.where(), "Snippet" + (snippets.size() + 1), block.body()));
                }
            }
        }
        return snippets;
    }

    private static Snippet snippet(String where, String name, String text) {
        List<String> imports = new ArrayList<>();
        List<String> lines = List.of(text.split("\n", -1));
        int i = 0;
        for (; i < lines.size() && (lines.get(i).startsWith("import ") || lines.get(i).isBlank()); i++) {
            if (!lines.get(i).isBlank()) {
                imports.add(lines.get(i));
            }
        }
        String body = String.join("\n", lines.subList(i, lines.size()));
        assertFalse(body.contains("\nimport ") || body.startsWith("import "), where + ": imports come first");
        for (String line : imports) {
            Matcher m = IMPORT.matcher(line);
            assertTrue(m.matches(), where + ": one named class per import, not '" + line + "'");
            assertTrue(
                    Pattern.compile("\\b" + m.group(3) + "\\b").matcher(body).find(),
                    where + " imports " + m.group(3) + " but does not use it");
        }
        return new Snippet(where, name, imports, body);
    }

    private Path compile(List<Snippet> snippets) throws Exception {
        Path src = Files.createDirectories(tmp.resolve("src"));
        List<String> args = new ArrayList<>(List.of("-classpath", classPath(), "-d"));
        Path classes = Files.createDirectories(tmp.resolve("classes"));
        args.add(classes.toString());
        for (Snippet snippet : snippets) {
            Path file = src.resolve(snippet.className + ".java");
            Files.writeString(file, snippet.source());
            args.add(file.toString());
        }
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int rc = compiler.run(null, diagnostics, diagnostics, args.toArray(String[]::new));
        assertEquals(0, rc, "documentation snippets do not compile:\n" + diagnostics);
        return classes;
    }

    /** Runs a snippet in its own JVM in {@code work}; returns what it printed. */
    private static String run(Snippet snippet, Path classes, Path work) throws Exception {
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb =
                new ProcessBuilder(
                        java,
                        "-Xmx2g",
                        "-Dai.djl.pytorch.num_threads=1",
                        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                        "-cp",
                        classes + File.pathSeparator + classPath(),
                        snippet.className);
        pb.directory(work.toFile());
        pb.redirectErrorStream(true);
        Process process = pb.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(5, TimeUnit.MINUTES), snippet.where() + " finished");
        assertEquals(0, process.exitValue(), snippet.where() + " failed:\n" + output + "\n" + snippet.source());
        return output;
    }

    private static String classPath() {
        return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    }
}
