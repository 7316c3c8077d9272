package io.github.djlllmzoo.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every code block of README.md and docs/ is tested or says why not, and every relative link
 * resolves: a {@code bash} block runs (in order, page by page, from one directory holding a copy
 * of {@code models/default}, with {@code bin/llmzoo} running the command line this build made)
 * and must exit 0; a {@code java} block is compiled and run by {@link DocsJavaSnippetTest}; any
 * other block, or one that cannot run here (it needs the network, a cluster, minutes), carries
 * {@code <!-- not-tested: reason -->} on the line before its fence. Links to files must name an
 * existing file, and {@code #anchors} a heading of their page.
 */
class DocsCodeBlocksTest {

    private static final Set<String> RUN = Set.of("bash", "java");
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
    private static final Pattern INLINE_CODE = Pattern.compile("`[^`]*`");

    @TempDir Path work;

    @Test
    void everyCodeBlockIsRunOrSaysWhyNot() throws IOException {
        List<String> unmarked = new ArrayList<>();
        for (String page : MarkdownDocs.pages()) {
            if (page.equals(MarkdownDocs.HISTORY)) {
                continue;
            }
            for (MarkdownDocs.Block block : MarkdownDocs.blocks(page)) {
                if (block.notTested().isEmpty() && !RUN.contains(block.language())) {
                    unmarked.add(block.where() + " (```" + block.language() + ")");
                }
            }
        }
        assertEquals(List.of(), unmarked, "blocks that are neither bash nor java need <!-- not-tested: reason -->");
    }

    @Test
    void everyBashBlockRunsAndExitsZero() throws Exception {
        Path bin = Files.createDirectories(work.resolve("bin"));
        MarkdownDocs.copyDefaultModel(work);
        Path launcher = bin.resolve("llmzoo");
        Files.writeString(launcher, launcher(), StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(launcher, PosixFilePermissions.fromString("rwxr-xr-x"));
        int ran = 0;
        for (String page : MarkdownDocs.pages()) {
            if (page.equals(MarkdownDocs.HISTORY)) {
                continue;
            }
            for (MarkdownDocs.Block block : MarkdownDocs.blocks(page)) {
                if (block.language().equals("bash") && block.notTested().isEmpty()) {
                    run(block);
                    ran++;
                }
            }
        }
        assertTrue(ran >= 3, "the README's command-line and fine-tuning quick starts run: " + ran + " blocks");
    }

    @Test
    void everyRelativeLinkAndAnchorResolves() throws IOException {
        List<String> broken = new ArrayList<>();
        for (String page : MarkdownDocs.pages()) {
            List<String> lines = MarkdownDocs.prose(page);
            for (int i = 0; i < lines.size(); i++) {
                Matcher link = LINK.matcher(INLINE_CODE.matcher(lines.get(i)).replaceAll(""));
                while (link.find()) {
                    String target = link.group(1);
                    if (target.matches("[a-z]+:.*")) {
                        continue; // http(s), mailto: outside the repository
                    }
                    String problem = problem(page, target);
                    if (problem != null) {
                        broken.add(page + ":" + (i + 1) + ": " + target + " (" + problem + ")");
                    }
                }
            }
        }
        assertEquals(List.of(), broken, "broken links");
    }

    /** @return what is wrong with a link of {@code page}, or null if it resolves */
    private static String problem(String page, String target) throws IOException {
        int hash = target.indexOf('#');
        String file = hash < 0 ? target : target.substring(0, hash);
        Path resolved = file.isEmpty()
                ? MarkdownDocs.ROOT.resolve(page)
                : MarkdownDocs.ROOT.resolve(page).getParent().resolve(file).normalize();
        if (!resolved.startsWith(MarkdownDocs.ROOT) || !Files.exists(resolved)) {
            return "no such file";
        }
        if (hash >= 0) {
            String relative = MarkdownDocs.ROOT.relativize(resolved).toString().replace(File.separatorChar, '/');
            if (!relative.endsWith(".md")) {
                return "an anchor into a file that is not Markdown";
            }
            if (!MarkdownDocs.anchors(relative).contains(target.substring(hash + 1))) {
                return "no such heading in " + relative;
            }
        }
        return null;
    }

    /** Runs a block with bash from the work directory; fails with its output unless it exits 0. */
    private void run(MarkdownDocs.Block block) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("bash", "-e", "-o", "pipefail", "-c", block.body());
        pb.directory(work.toFile());
        pb.environment().put("OPT_OUT_TRACKING", "true");
        pb.redirectErrorStream(true);
        Process process = pb.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(5, TimeUnit.MINUTES), block.where() + " finished");
        assertEquals(0, process.exitValue(), block.where() + " failed:\n" + block.body() + "\n" + output);
    }

    /** {@code bin/llmzoo} as the blocks call it: this build's command line, as bin/llmzoo starts it. */
    private static String launcher() {
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        return "#!/usr/bin/env bash\n"
                + "exec '" + java + "' -Xmx2g -Dai.djl.pytorch.num_threads=1 -DOPT_OUT_TRACKING=true -Doffline=true"
                + " -Dllmzoo.home='" + MarkdownDocs.ROOT + "'"
                + " -Dorg.slf4j.simpleLogger.defaultLogLevel=warn"
                + " -Dorg.slf4j.simpleLogger.log.ai.djl.util.cuda.CudaUtils=error"
                + " -cp '" + classPath + "' io.github.djlllmzoo.cli.LlmZoo \"$@\"\n";
    }
}
