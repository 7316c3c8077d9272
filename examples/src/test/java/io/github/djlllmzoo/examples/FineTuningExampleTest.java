package io.github.djlllmzoo.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FineTuningExampleTest {

    private static final Pattern REPORT =
            Pattern.compile("held-out perplexity (\\S+) -> (\\S+) after (\\d+) steps; saved (.+)\\R");

    @TempDir Path tmp;

    @Test
    void fineTuningOnATextAtLeastHalvesItsHeldOutPerplexityAndSavesALoadableCheckpoint() throws Exception {
        Path text = tmp.resolve("notes.txt");
        Files.writeString(text, String.join("\n", sentences()));
        Path out = tmp.resolve("tuned");

        String printed =
                ExampleRun.stdout(
                        FineTuningExample::main, ExampleRun.defaultModel().toString(), text.toString(), out.toString(), "30");

        Matcher report = REPORT.matcher(printed);
        assertTrue(report.matches(), printed);
        double before = Double.parseDouble(report.group(1));
        double after = Double.parseDouble(report.group(2));
        // The bar of the project's fine-tuning check: a new pattern's held-out perplexity at least halves.
        assertTrue(after < before / 2, "held-out perplexity " + before + " -> " + after);
        assertEquals(30, Integer.parseInt(report.group(3)));
        try (LocalModel tuned = LocalModel.load(out)) {
            assertTrue(tuned.hasTokenizer(), "the checkpoint carries the tokenizer");
        }
    }

    /** Sentences of one pattern the default model has not seen: what fine-tuning should learn. */
    private static List<String> sentences() {
        String[] names = {"Ada", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gus", "Hana"};
        String[] metals = {"copper", "silver", "zinc", "tin", "iron", "gold"};
        String[] tools = {"kettle", "ladder", "compass", "lantern", "anvil"};
        List<String> lines = new ArrayList<>();
        for (String name : names) {
            for (String metal : metals) {
                for (String tool : tools) {
                    lines.add(name + " polished the " + metal + " " + tool + " in the workshop at dawn.");
                }
            }
        }
        return lines;
    }
}
