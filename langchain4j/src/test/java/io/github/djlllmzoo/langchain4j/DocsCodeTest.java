package io.github.djlllmzoo.langchain4j;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every Java block of {@code docs/langchain4j.md} not marked {@code <!-- not-tested: ... -->} is a
 * {@code // doc:NAME} ... {@code // end} region of {@link AiServicesToolCallingTest}, which
 * compiles and runs it: the page's code cannot drift from what is tested.
 */
class DocsCodeTest {

    private static final Path DOC = Path.of("..", "docs", "langchain4j.md");
    private static final Path SOURCE =
            Path.of(
                    "src", "test", "java", "io", "github", "djlllmzoo", "langchain4j",
                    "AiServicesToolCallingTest.java");
    private static final Pattern BLOCK =
            Pattern.compile("(<!-- not-tested:[^\n]*-->\n)?```java\n(.*?)```", Pattern.DOTALL);
    private static final Pattern REGION =
            Pattern.compile("\n([ ]*)// doc:[\\w-]+\n(.*?)\n[ ]*// end\n", Pattern.DOTALL);

    @Test
    void everyTestedJavaBlockOfThePageIsTheTestsCode() throws Exception {
        List<String> regions = new ArrayList<>();
        Matcher region = REGION.matcher(Files.readString(SOURCE, StandardCharsets.UTF_8));
        while (region.find()) {
            regions.add(dedent(region.group(2), region.group(1).length()));
        }
        assertTrue(regions.size() >= 4, "regions: " + regions.size());
        Matcher block = BLOCK.matcher(Files.readString(DOC, StandardCharsets.UTF_8));
        int tested = 0;
        while (block.find()) {
            if (block.group(1) == null) {
                tested++;
                String code = block.group(2).strip();
                assertTrue(regions.contains(code), "not a region of the test:\n" + code);
            }
        }
        assertTrue(tested >= 4, "the page shows the service, both models and the call: " + tested);
    }

    private static String dedent(String text, int indent) {
        StringBuilder out = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            out.append(line.length() >= indent ? line.substring(indent) : line.strip()).append('\n');
        }
        return out.toString().strip();
    }
}
