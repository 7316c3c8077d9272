package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Failures of every {@code llmzoo} subcommand: one line {@code error: ...} on stderr naming the
 * fault, nothing on stdout, a non-zero exit, no output left behind; the stack trace only with
 * {@code --debug}.
 */
class CliFailureTest {

    private static final Path GPT2 = Paths.get(System.getProperty("llmzoo.testdata"), "golden", "gpt2-tiny");

    @TempDir Path temp;
    private Path broken;
    private Path model;
    private Path text;

    @BeforeEach
    void setUp() throws IOException {
        broken = Files.createDirectories(temp.resolve("broken"));
        Files.copy(GPT2.resolve("model.safetensors"), broken.resolve("model.safetensors"));
        Files.writeString(broken.resolve("config.json"), "{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_head\": 3}");
        model = Files.createDirectories(temp.resolve("model"));
        for (String name : new String[] {"config.json", "model.safetensors"}) {
            Files.copy(GPT2.resolve(name), model.resolve(name));
        }
        Files.writeString(
                model.resolve("tokenizer.json"),
                "{\"version\": \"1.0\", \"pre_tokenizer\": {\"type\": \"Whitespace\"}, \"model\": {\"type\": \"WordLevel\","
                        + " \"vocab\": {\"<unk>\": 0, \"some\": 1, \"words\": 2, \"to\": 3, \"train\": 4, \"on\": 5},"
                        + " \"unk_token\": \"<unk>\"}}");
        text = Files.writeString(temp.resolve("train.txt"), "some words to train on\n", StandardCharsets.UTF_8);
    }

    /**
     * Arguments with {@code {gpt2}} (golden, no tokenizer), {@code {model}} (golden with a
     * tokenizer), {@code {broken}}, {@code {text}}, {@code {out}} filled in.
     */
    static Stream<Arguments> failures() {
        return Stream.of(
                Arguments.of(List.of("generate", "--model", "{broken}", "--prompt-ids", "1,2"), 1, List.of("config.json", "n_embd")),
                Arguments.of(List.of("generate", "--model", "{gpt2}", "--prompt-ids", "1,99999", "--output", "ids"), 1, List.of("99999")),
                Arguments.of(List.of("generate", "--model", "{gpt2}", "--prompt-ids", "1,2", "--top-p", "1.5"), 2, List.of("top")),
                Arguments.of(List.of("generate", "--model", "{gpt2}", "--prompt-ids", "1,2", "--stop", ""), 2, List.of("stop")),
                Arguments.of(List.of("score", "--model", "{broken}", "--ids", "1,2"), 1, List.of("config.json", "n_embd")),
                Arguments.of(List.of("score", "--model", "{gpt2}", "--ids", "1,-4"), 1, List.of("-4")),
                Arguments.of(List.of("score", "--model", "/nonexistent/ckpt", "--ids", "1,2"), 1, List.of("/nonexistent/ckpt")),
                Arguments.of(List.of("finetune", "--model", "{broken}", "--data", "{text}", "--out", "{out}"), 1, List.of("config.json")),
                Arguments.of(List.of("finetune", "--model", "{model}", "--data", "{text}.missing", "--out", "{out}"), 1, List.of("--data", "train.txt.missing", "no such file")),
                Arguments.of(List.of("finetune", "--model", "{model}", "--data", "{text}", "--eval-data", "{text}.gone", "--out", "{out}"), 1, List.of("--eval-data", "train.txt.gone", "no such file")),
                Arguments.of(List.of("generate", "--model", "{text}", "--prompt-ids", "1,2"), 1, List.of("train.txt", "is a file, not a model directory")),
                Arguments.of(List.of("score", "--model", "{gpt2}/model.safetensors", "--ids", "1,2"), 1, List.of("is a file, not a model directory", "pass its directory")),
                Arguments.of(List.of("finetune", "--model", "{text}", "--data", "{text}", "--out", "{out}"), 1, List.of("is a file, not a model directory")),
                Arguments.of(List.of("generate", "--model", "{gpt2}"), 2, List.of("missing required argument", "--prompt")),
                Arguments.of(List.of("generate", "--model", "{gpt2}", "--promt", "x"), 2, List.of("unknown option '--promt'", "did you mean '--prompt'?")),
                Arguments.of(List.of("generate", "--model", "{gpt2}", "--prompt-ids", "1,2", "--temprature", "1"), 2, List.of("did you mean '--temperature'?")),
                Arguments.of(List.of("generat", "--prompt", "x"), 2, List.of("unknown command 'generat'", "did you mean 'generate'?", "score", "serve", "init-random")),
                Arguments.of(List.of("finetune", "--model", "{model}", "--data", "{text}", "--out", "{out}", "--lr", "-1"), 2, List.of("learning rate", "-1")),
                Arguments.of(List.of("models", "--bogus"), 2, List.of("--bogus")),
                Arguments.of(List.of("nosuchcommand"), 2, List.of("unknown command 'nosuchcommand'", "generate", "make-default-model")),
                Arguments.of(List.of(), 2, List.of("missing command", "generate", "init-random")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("failures")
    void aFailureIsOneErrorLineANonZeroExitAndNoOutput(List<String> template, int exitCode, List<String> named) throws IOException {
        Path out = temp.resolve("out");
        CliRunner run = CliRunner.run(args(template, out));
        assertEquals(exitCode, run.exitCode, run.err);
        assertEquals("", run.out, "nothing on stdout");
        List<String> lines = run.err.strip().lines().toList();
        assertEquals(1, lines.size(), run.err);
        assertTrue(lines.get(0).startsWith("error: "), run.err);
        assertFalse(lines.get(0).substring("error: ".length()).toLowerCase(java.util.Locale.ROOT).startsWith("error"), "one prefix: " + run.err);
        for (String part : named) {
            assertTrue(lines.get(0).contains(part), "the error should name " + part + ": " + run.err);
        }
        assertFalse(Files.exists(out), "no output directory left behind");
        try (Stream<Path> entries = Files.list(temp)) {
            assertEquals(List.of("broken", "model", "train.txt"), entries.map(p -> p.getFileName().toString()).sorted().toList(), "no partial files");
        }
    }

    private static void assertEveryModelCommandsHelpOffers(String option) {
        for (String command : List.of("generate", "score", "serve", "bench")) {
            CliRunner help = CliRunner.run(command, "--help");
            assertEquals(0, help.exitCode, help.err);
            assertTrue(help.out.contains(option), help.out);
        }
    }

    @Test
    void helpOffersEveryDtypeAndAnUnknownOneIsRefusedByValue() {
        assertEveryModelCommandsHelpOffers("--dtype=float32|bfloat16|float16|int8|int4|int6|q4_k");
        CliRunner refused = CliRunner.run(args(List.of("generate", "--model", "{gpt2}", "--prompt-ids", "1,2", "--dtype", "bf15"), temp.resolve("out")));
        assertEquals(2, refused.exitCode, refused.err);
        assertTrue(refused.err.startsWith("error: --dtype must be float32, bfloat16, float16, int8, int4, int6 or q4_k, not 'bf15'"),
                refused.err);
    }

    @Test
    void everyModelCommandTakesAKvCacheDtypeAndAnUnknownOneIsRefusedByName() {
        assertEveryModelCommandsHelpOffers("--kv-cache-dtype=float32|float16");
        for (List<String> command : List.of(List.of("generate", "--prompt-ids"), List.of("score", "--ids"))) {
            CliRunner refused = CliRunner.run(args(List.of(command.get(0), "--model", "{gpt2}", command.get(1), "1,2",
                    "--kv-cache-dtype", "bfloat16"), temp.resolve("out")));
            assertEquals(2, refused.exitCode, refused.err);
            assertTrue(refused.err.startsWith("error: --kv-cache-dtype must be float32 or float16, not 'bfloat16'"),
                    refused.err);
        }
        CliRunner generated = CliRunner.run(args(List.of("generate", "--model", "{gpt2}", "--prompt-ids", "1,2",
                "--max-new-tokens", "3", "--output", "ids", "--kv-cache-dtype", "float16"), temp.resolve("out")));
        assertEquals(0, generated.exitCode, generated.err);
    }

    @Test
    void debugAddsTheStackTraceAfterTheErrorLine() {
        List<String> template = List.of("generate", "--model", "{broken}", "--prompt-ids", "1,2");
        CliRunner plain = CliRunner.run(args(template, temp.resolve("out")));
        CliRunner debug = CliRunner.run(args(List.of("--debug", "generate", "--model", "{broken}", "--prompt-ids", "1,2"), temp.resolve("out")));
        assertEquals(plain.exitCode, debug.exitCode);
        List<String> lines = debug.err.lines().toList();
        assertEquals(plain.err.strip(), lines.get(0), "the same error line comes first");
        assertTrue(lines.stream().anyMatch(l -> l.contains("InvalidCheckpointException")), debug.err);
        assertTrue(lines.stream().anyMatch(l -> l.strip().startsWith("at io.github.djlllmzoo.")), debug.err);
        CliRunner after = CliRunner.run(args(List.of("generate", "--model", "{broken}", "--prompt-ids", "1,2", "--debug"), temp.resolve("out")));
        assertTrue(after.err.lines().count() > 1, "--debug after the subcommand works too: " + after.err);
    }

    private String[] args(List<String> template, Path out) {
        return template.stream()
                .map(a -> a.replace("{gpt2}", GPT2.toString())
                        .replace("{broken}", broken.toString())
                        .replace("{model}", model.toString())
                        .replace("{text}", text.toString())
                        .replace("{out}", out.toString()))
                .toArray(String[]::new);
    }
}
