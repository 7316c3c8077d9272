package io.github.djlllmzoo.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;


import io.github.djlllmzoo.defaultmodel.ByteLevelBpeTrainer;
import io.github.djlllmzoo.defaultmodel.StoryCorpus;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Compiles and runs the Java snippet of README.md (the block after {@code <!-- java-api-snippet
 * -->}) exactly as written, against a local checkpoint, so the documented API cannot drift.
 */
class ReadmeJavaSnippetTest {

    private static final Path README = Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "..", "README.md");
    private static final String MARKER = "<!-- java-api-snippet -->";

    @TempDir Path tmp;

    @Test
    void theReadmeSnippetCompilesAndGeneratesText() throws Exception {
        String snippet = snippet(Files.readString(README, StandardCharsets.UTF_8));
        Path modelDir = checkpointWithTokenizer();

        Path src = Files.createDirectories(tmp.resolve("src"));
        String source =
                "import ai.djl.inference.Predictor;\n"
                        + "import ai.djl.repository.zoo.Criteria;\n"
                        + "import ai.djl.repository.zoo.ZooModel;\n"
                        + "public class Snippet {\n"
                        + "  public static void run(String modelDir) throws Exception {\n"
                        + snippet
                        + "\n  }\n}\n";
        Files.writeString(src.resolve("Snippet.java"), source);
        Path classes = Files.createDirectories(tmp.resolve("classes"));
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int rc =
                compiler.run(
                        null, diagnostics, diagnostics,
                        "-classpath", System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
                        "-d", classes.toString(),
                        src.resolve("Snippet.java").toString());
        assertEquals(0, rc, "README snippet does not compile:\n" + diagnostics + "\n" + source);

        PrintStream original = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        try (URLClassLoader loader =
                new URLClassLoader(new URL[] {classes.toUri().toURL()}, getClass().getClassLoader())) {
            Method run = loader.loadClass("Snippet").getMethod("run", String.class);
            System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
            run.invoke(null, modelDir.toString());
        } finally {
            System.setOut(original);
        }
        String text = printed.toString(StandardCharsets.UTF_8);
        assertFalse(text.isBlank(), "the snippet prints the generated text");
    }

    private static String snippet(String readme) {
        int marker = readme.indexOf(MARKER);
        assertTrue(marker >= 0, "README.md has no " + MARKER + " marker");
        int start = readme.indexOf("```java\n", marker);
        int end = readme.indexOf("```", start + 8);
        assertTrue(start > 0 && end > start, "no ```java block after the marker");
        return readme.substring(start + 8, end);
    }

    /** The golden gpt2-tiny weights with a 512-token tokenizer trained by the project's trainer. */
    private Path checkpointWithTokenizer() throws Exception {
        Path golden = Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "gpt2-tiny");
        Path dir = Files.createDirectories(tmp.resolve("model"));
        Files.copy(golden.resolve("config.json"), dir.resolve("config.json"));
        Files.copy(golden.resolve("model.safetensors"), dir.resolve("model.safetensors"));
        ByteLevelBpeTrainer.builder()
                .vocabSize(512)
                .addBosToken(false)
                .build()
                .train(List.of(new StoryCorpus(3).generate(200)))
                .save(dir);
        return dir;
    }
}
