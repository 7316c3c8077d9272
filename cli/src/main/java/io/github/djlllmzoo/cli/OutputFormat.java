package io.github.djlllmzoo.cli;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/** The {@code --output} formats. */
enum OutputFormat {
    TEXT,
    IDS,
    JSON;

    static OutputFormat parse(CommandSpec spec, String value, OutputFormat... allowed) {
        for (OutputFormat format : allowed) {
            if (format.name().equalsIgnoreCase(value)) {
                return format;
            }
        }
        String names =
                Arrays.stream(allowed)
                        .map(f -> f.name().toLowerCase(Locale.ROOT))
                        .collect(Collectors.joining("|"));
        throw new ParameterException(
                spec.commandLine(), "--output must be " + names + ", not '" + value + "'");
    }
}
