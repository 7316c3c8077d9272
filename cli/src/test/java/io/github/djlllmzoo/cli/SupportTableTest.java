package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import ai.djl.Device;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.blocks.config.LlamaFamily;
import io.github.djlllmzoo.zoo.KnownModel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

/**
 * The README's table "What runs where" (families × weight formats × devices) says what the code
 * does: its rows are exactly the {@code model_type}s the config parsers accept, each row's registry
 * names are exactly the registry's entries of that family, its format columns are exactly {@link
 * WeightFormat}'s, every "CPU" cell loads and scores a golden checkpoint of that family in that
 * format through {@code llmzoo score --dtype}, and every "GPU" cell is a {@code --dtype} that
 * {@code --device gpu} accepts (a missing one is one it refuses).
 */
class SupportTableTest {

    private static final String MARKER = "<!-- support-table:";
    private static final Pattern CODE = Pattern.compile("`([^`]+)`");

    /** A row of the table: the family and, per format column, the devices listed. */
    private record Row(String family, Set<String> registryNames, Map<String, Set<String>> devices) {}

    private static List<String> formats;
    private static List<Row> rows;

    @BeforeAll
    static void readTable() throws IOException {
        String readme =
                Files.readString(Path.of(System.getProperty(DefaultModel.HOME_PROPERTY), "README.md"), StandardCharsets.UTF_8);
        int start = readme.indexOf(MARKER);
        assertTrue(start >= 0, "README.md marks its support table with " + MARKER);
        List<String> lines = readme.substring(start).lines().skip(1).takeWhile(l -> l.startsWith("|")).toList();
        assertTrue(lines.size() > 2, "a header, a rule and rows after the marker");
        List<String> header = cells(lines.get(0));
        assertEquals("registry names", header.get(1), "the second column names the registry entries");
        formats = header.subList(2, header.size());
        rows = new ArrayList<>();
        for (String line : lines.subList(2, lines.size())) {
            List<String> cells = cells(line);
            assertEquals(header.size(), cells.size(), "cells of " + line);
            Map<String, Set<String>> devices = new LinkedHashMap<>();
            for (int i = 0; i < formats.size(); i++) {
                Set<String> listed = new TreeSet<>();
                for (String device : cells.get(i + 2).split(",")) {
                    if (!device.isBlank()) {
                        listed.add(device.trim());
                    }
                }
                devices.put(formats.get(i), listed);
            }
            rows.add(new Row(codes(cells.get(0)).get(0), new TreeSet<>(codes(cells.get(1))), devices));
        }
    }

    @Test
    void theRowsAreExactlyTheFamiliesTheConfigParsersAccept() {
        Set<String> accepted = new TreeSet<>(LlamaFamily.MODEL_TYPES);
        accepted.add(Gpt2Config.MODEL_TYPE);
        assertEquals(accepted, new TreeSet<>(rows.stream().map(Row::family).toList()));
        assertEquals(rows.size(), accepted.size(), "one row per family");
    }

    @Test
    void eachRowListsExactlyTheRegistryEntriesOfItsFamily() {
        for (Row row : rows) {
            Set<String> registered = new TreeSet<>();
            KnownModel.ALL.stream().filter(m -> m.family().equals(row.family())).forEach(m -> registered.add(m.name()));
            assertEquals(registered, row.registryNames(), "registry names of " + row.family());
        }
    }

    @Test
    void theFormatColumnsAreExactlyTheWeightFormats() {
        List<String> names = Arrays.stream(WeightFormat.values()).map(WeightFormat::dtypeName).toList();
        assertEquals(names, formats);
    }

    @Test
    void everyCpuCellScoresAGoldenCheckpointOfItsFamilyInItsFormat() throws IOException {
        for (Row row : rows) {
            GoldenCase golden = goldenCaseOf(row.family());
            for (String format : formats) {
                CliRunner run =
                        CliRunner.run(
                                "score", "--model", golden.dir().toString(), "--ids", golden.idList("prompt_ids"),
                                "--dtype", format, "--output", "json");
                String what = row.family() + " in " + format + " on the CPU (" + golden.dir() + ")";
                if (row.devices().get(format).contains("CPU")) {
                    assertEquals(0, run.exitCode, what + ": " + run.err);
                    double perplexity = JsonParser.parseString(run.out).getAsJsonObject().get("perplexity").getAsDouble();
                    assertTrue(Double.isFinite(perplexity), what + ": perplexity " + perplexity);
                } else {
                    assertNotEquals(0, run.exitCode, what + " runs, but the README does not list it");
                }
            }
        }
    }

    @Test
    void everyGpuCellIsADtypeThatDeviceGpuAccepts() {
        for (String format : formats) {
            boolean accepted;
            try {
                gpuOptions(format).dataType(Device.gpu());
                accepted = true;
            } catch (ParameterException e) {
                accepted = false;
                assertFalse(e.getMessage().isBlank(), "the refusal of " + format + " on a GPU says why");
            }
            for (Row row : rows) {
                assertEquals(accepted, row.devices().get(format).contains("GPU"), row.family() + " in " + format + " on a GPU");
            }
        }
    }

    /** The compute options {@code generate --device gpu --dtype FORMAT} parses to (asked with a GPU given, not the engine). */
    private static ComputeOptions gpuOptions(String format) {
        CommandLine cli = new CommandLine(new LlmZoo());
        cli.parseArgs("generate", "--device", "gpu", "--dtype", format, "--prompt", "x");
        GenerateCommand generate = cli.getSubcommands().get("generate").getCommand();
        return generate.modelOptions.compute;
    }

    /** The first golden checkpoint of the test data whose {@code config.json} is of {@code family}. */
    private static GoldenCase goldenCaseOf(String family) throws IOException {
        Path root = GoldenCase.dir("x").getParent();
        try (Stream<Path> dirs = Files.list(root)) {
            for (Path dir : dirs.sorted().toList()) {
                Path config = dir.resolve("config.json");
                if (Files.isRegularFile(config)
                        && family.equals(JsonParser.parseString(Files.readString(config)).getAsJsonObject()
                                .get("model_type").getAsString())) {
                    return GoldenCase.load(dir.getFileName().toString());
                }
            }
        }
        fail("no golden checkpoint of " + family + " under " + root);
        throw new AssertionError();
    }

    private static List<String> cells(String line) {
        String inner = line.trim();
        inner = inner.substring(1, inner.length() - 1);
        return Arrays.stream(inner.split("\\|", -1)).map(String::trim).toList();
    }

    private static List<String> codes(String cell) {
        List<String> codes = new ArrayList<>();
        Matcher m = CODE.matcher(cell);
        while (m.find()) {
            codes.add(m.group(1));
        }
        return codes;
    }
}
