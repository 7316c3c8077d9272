package io.github.djlllmzoo.benchmarks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.blocks.WeightFormat;
import java.net.URI;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The benchmarks' command lines: defaults, typed values, and problems that name the flag and value. */
class BenchmarkArgsTest {

    private static BenchmarkArgs declared() {
        return BenchmarkArgs.command("Bench")
                .positional("URL")
                .required("--model", "DIR")
                .option("--weights", "float32|int8", "float32")
                .option("--rows", "N", "8")
                .option("--seed", "S", "1")
                .option("--share", "P", "0")
                .option("--chunk", "C[,C...]", "64")
                .option("--name", "NAME", null);
    }

    @Test
    void optionsNotGivenTakeTheirDefaultsAndGivenOnesTheirTypedValues() {
        BenchmarkArgs args = declared().parse("http://h:1", "--model", "/m", "--rows", "3", "--chunk", "16, 32",
                "--weights", "int8", "--seed", "12345678901", "--share", "0.25");
        assertEquals(URI.create("http://h:1"), args.value("URL", URI::create));
        assertEquals(Path.of("/m"), args.path("--model"));
        assertEquals(3, args.integer("--rows"));
        assertArrayEquals(new int[] {16, 32}, args.integers("--chunk"));
        assertEquals(WeightFormat.INT8, args.value("--weights", WeightFormat::parse));
        assertEquals(12345678901L, args.longInteger("--seed"));
        assertEquals(0.25, args.decimal("--share"));
        assertFalse(args.has("--name"));
        assertNull(args.text("--name"));

        BenchmarkArgs defaults = declared().parse("http://h:1", "--model", "/m");
        assertEquals(8, defaults.integer("--rows"));
        assertArrayEquals(new int[] {64}, defaults.integers("--chunk"));
        assertEquals(WeightFormat.FLOAT32, defaults.value("--weights", WeightFormat::parse));
        assertTrue(defaults.has("--model"));
    }

    @Test
    void aLocalModelsBenchmarkReadsItsDirectoryAndWeightFormat() {
        BenchmarkArgs args = BenchmarkArgs.command("Local").localModel("int8");
        assertEquals(WeightFormat.INT8, args.parse("--model", "/m").weights());
        assertEquals(Path.of("/m"), args.modelDir());
        assertEquals(WeightFormat.FLOAT32, args.parse("--model", "/m", "--weights", "float32").weights());
        assertMessage("--model DIR is required", () -> args.parse("--weights", "int8"));
    }

    @Test
    void aBadValueIsRefusedNamingTheFlagAndTheValue() {
        BenchmarkArgs args = declared().parse("u", "--model", "/m", "--rows", "eight", "--chunk", "16,x",
                "--weights", "int3", "--share", "half");
        for (String[] flagAndValue : new String[][] {
                {"--rows", "eight"}, {"--chunk", "16,x"}, {"--weights", "int3"}, {"--share", "half"}}) {
            String flag = flagAndValue[0];
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> {
                switch (flag) {
                    case "--rows" -> args.integer(flag);
                    case "--chunk" -> args.integers(flag);
                    case "--weights" -> args.value(flag, WeightFormat::parse);
                    default -> args.decimal(flag);
                }
            });
            assertTrue(e.getMessage().contains(flag) && e.getMessage().contains("'" + flagAndValue[1] + "'"),
                    e.getMessage());
        }
    }

    @Test
    void unknownFlagsMissingValuesAndMissingRequiredArgumentsAreRefusedByName() {
        assertMessage("unknown option --rowz", () -> declared().parse("u", "--model", "/m", "--rowz", "3"));
        assertMessage("option --rows has no value", () -> declared().parse("u", "--model", "/m", "--rows"));
        assertMessage("--model DIR is required", () -> declared().parse("u", "--rows", "3"));
        assertMessage("URL is required", () -> declared().parse("--model", "/m"));
        assertMessage("unexpected argument extra", () -> declared().parse("u", "--model", "/m", "extra", "x"));
        assertMessage("--prefix 0 must be at least 1", () -> {
            throw declared().parse("u", "--model", "/m").fail("--prefix 0 must be at least 1");
        });
    }

    @Test
    void theUsageLineListsTheArgumentsInOrderWithTheDefaults() {
        assertEquals("usage: Bench URL --model DIR [--weights float32|int8 (float32)] [--rows N (8)] [--seed S (1)]"
                + " [--share P (0)] [--chunk C[,C...] (64)] [--name NAME]", declared().usage());
    }

    private static void assertMessage(String message, org.junit.jupiter.api.function.Executable parse) {
        assertEquals(message, assertThrows(IllegalArgumentException.class, parse).getMessage());
    }
}
