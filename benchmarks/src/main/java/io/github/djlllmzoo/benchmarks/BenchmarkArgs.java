package io.github.djlllmzoo.benchmarks;

import io.github.djlllmzoo.blocks.WeightFormat;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The command line of a benchmark's {@code main}: positional arguments first (a server's URL), then
 * {@code --flag value} pairs. Each option is declared with the name of its value and its default
 * ({@code null}: none, the benchmark decides), from which the usage line is made; its value is then
 * read typed ({@link #integer}, {@link #integers}, {@link #value} for an enum's or a path's parser...),
 * a positional argument's too, by its name.
 * An unknown flag, a flag without a value, a missing required option or a value its parser refuses
 * is a problem naming the flag and the value: thrown as an {@link IllegalArgumentException} from
 * {@link #parse}'s arguments, or, from {@link #parseOrExit}'s (a benchmark's {@code main}), printed
 * as one {@code error:} line and the usage before the process exits with status 2.
 *
 * <pre>{@code
 * BenchmarkArgs args = BenchmarkArgs.command("PrefixCacheLatency")
 *         .required("--model", "DIR")
 *         .option("--runs", "N", "5")
 *         .parseOrExit(argv);
 * int runs = args.integer("--runs");
 * }</pre>
 */
public final class BenchmarkArgs {

    /** Exit status of a command line the benchmark cannot run (as {@code bin/llmzoo}'s). */
    static final int USAGE_STATUS = 2;

    private final String command;
    private final List<String> positionals = new ArrayList<>();
    /** Each option's value name and default, in the order declared (the usage line's). */
    private final Map<String, String[]> options = new LinkedHashMap<>();
    private final List<String> requiredOptions = new ArrayList<>();
    /** The values the command line gave, by flag or positional argument's name. */
    private final Map<String, String> given = new LinkedHashMap<>();
    /** Whether a problem exits the process (a benchmark's {@code main}) instead of being thrown. */
    private boolean exits;

    private BenchmarkArgs(String command) {
        this.command = command;
    }

    /**
     * Starts the declaration of a benchmark's command line.
     *
     * @param command the benchmark's name, as the usage line starts
     * @return the declaration, to add arguments to
     */
    public static BenchmarkArgs command(String command) {
        return new BenchmarkArgs(command);
    }

    /**
     * Declares the next positional argument, required, given before any option.
     *
     * @param name its name in the usage line ({@code URL})
     * @return this
     */
    public BenchmarkArgs positional(String name) {
        positionals.add(name);
        options.put(name, new String[] {name, null});
        return this;
    }

    /**
     * Declares an option the command line must give.
     *
     * @param flag the flag ({@code --model})
     * @param valueName its value's name in the usage line ({@code DIR})
     * @return this
     */
    public BenchmarkArgs required(String flag, String valueName) {
        requiredOptions.add(flag);
        return option(flag, valueName, null);
    }

    /**
     * Declares the options of a benchmark of a checkpoint on disk: {@code --model DIR} (required)
     * and {@code --weights FORMAT}, read by {@link #modelDir} and {@link #weights}.
     *
     * @param weights the weight format where the command line gives none ({@code float32}, {@code int8})
     * @return this
     */
    public BenchmarkArgs localModel(String weights) {
        return required("--model", "DIR").option("--weights", "float32|int8|...", weights);
    }

    /** @return {@code --model}'s directory ({@link #localModel}) */
    public Path modelDir() {
        return path("--model");
    }

    /** @return {@code --weights}' format ({@link #localModel}) */
    public WeightFormat weights() {
        return value("--weights", WeightFormat::parse);
    }

    /**
     * Declares an option.
     *
     * @param flag the flag ({@code --rows})
     * @param valueName its value's name in the usage line ({@code N}, {@code float32|int8})
     * @param fallback the value where the command line does not give one, as it would be written;
     *     {@code null}: none ({@link #has} says whether it was given)
     * @return this
     */
    public BenchmarkArgs option(String flag, String valueName, String fallback) {
        options.put(flag, new String[] {valueName, fallback});
        return this;
    }

    /** @return the usage line: {@code usage: COMMAND POSITIONAL... --flag VALUE [--flag VALUE (default)]...} */
    public String usage() {
        StringBuilder line = new StringBuilder("usage: ").append(command);
        positionals.forEach(name -> line.append(' ').append(name));
        options.forEach((flag, option) -> {
            if (positionals.contains(flag)) {
                return;
            }
            String pair = flag + " " + option[0];
            if (requiredOptions.contains(flag)) {
                line.append(' ').append(pair);
            } else {
                line.append(" [").append(pair).append(option[1] == null ? "" : " (" + option[1] + ")").append(']');
            }
        });
        return line.toString();
    }

    /**
     * Reads a command line, its problems thrown.
     *
     * @param args the arguments
     * @return this, its values read
     * @throws IllegalArgumentException naming the flag or argument at fault
     */
    public BenchmarkArgs parse(String... args) {
        given.clear();
        int at = 0;
        for (String name : positionals) {
            if (at >= args.length || args[at].startsWith("--")) {
                throw problem(name + " is required");
            }
            given.put(name, args[at++]);
        }
        for (; at < args.length; at += 2) {
            String flag = args[at];
            if (!options.containsKey(flag) || positionals.contains(flag)) {
                throw problem((flag.startsWith("--") ? "unknown option " : "unexpected argument ") + flag);
            }
            if (at + 1 >= args.length) {
                throw problem("option " + flag + " has no value");
            }
            given.put(flag, args[at + 1]);
        }
        for (String flag : requiredOptions) {
            if (!given.containsKey(flag)) {
                throw problem(flag + " " + options.get(flag)[0] + " is required");
            }
        }
        return this;
    }

    /**
     * Reads a benchmark's command line: a problem, here or in a value read later, is printed as an
     * {@code error:} line and the usage, and the process exits with status 2.
     *
     * @param args the arguments of {@code main}
     * @return this, its values read
     */
    public BenchmarkArgs parseOrExit(String... args) {
        exits = true;
        return parse(args);
    }

    /**
     * @param flag a declared option (or positional argument: always given)
     * @return whether the command line gave it
     */
    public boolean has(String flag) {
        declared(flag);
        return given.containsKey(flag);
    }

    /**
     * @param flag a declared option
     * @return its value as given, else its default ({@code null} where it has none)
     */
    public String text(String flag) {
        String[] option = declared(flag);
        return given.getOrDefault(flag, option[1]);
    }

    /**
     * @param flag a declared option
     * @param fallback the value where the command line gives none and the option has no default
     *     (one read when the benchmark runs, as an environment variable's)
     * @return its value as given, else its default, else {@code fallback}
     */
    public String text(String flag, String fallback) {
        String text = text(flag);
        return text == null ? fallback : text;
    }

    /**
     * An option's value read by {@code parser}, whose refusal (any runtime exception) becomes a
     * problem naming the flag and the value.
     *
     * @param flag a declared option
     * @param parser reads the value ({@code WeightFormat::parse}, {@code Path::of})
     * @param <T> the value's type
     * @return the value, {@code null} where the option has neither a value nor a default
     */
    public <T> T value(String flag, Function<String, T> parser) {
        String text = text(flag);
        if (text == null) {
            return null;
        }
        try {
            return parser.apply(text.trim());
        } catch (RuntimeException e) {
            throw problem("bad value '" + text + "' for " + flag + (e.getMessage() == null ? "" : ": " + e.getMessage()));
        }
    }

    /**
     * @param flag a declared option with a default or given
     * @return its value as a whole number
     */
    public int integer(String flag) {
        return present(flag, value(flag, v -> parsed(v, Integer::parseInt, "not a whole number")));
    }

    /**
     * @param flag a declared option with a default or given
     * @return its value as a whole number, of up to 64 bits
     */
    public long longInteger(String flag) {
        return present(flag, value(flag, v -> parsed(v, Long::parseLong, "not a whole number")));
    }

    /**
     * @param flag a declared option with a default or given
     * @return its value as a number
     */
    public double decimal(String flag) {
        return present(flag, value(flag, v -> parsed(v, Double::parseDouble, "not a number")));
    }

    /**
     * @param flag a declared option with a default or given
     * @return its value as a path
     */
    public Path path(String flag) {
        return present(flag, value(flag, Path::of));
    }

    /**
     * A comma-separated list of whole numbers, each read by {@code number} (which may take words
     * of its own, as {@code decode}).
     *
     * @param flag a declared option with a default or given
     * @param number reads one element
     * @return the numbers, in order
     */
    public int[] integers(String flag, Function<String, Integer> number) {
        return present(flag, value(flag, list -> Arrays.stream(list.split(","))
                .mapToInt(v -> number.apply(v.trim()))
                .toArray()));
    }

    /**
     * @param flag a declared option with a default or given
     * @return its value as a comma-separated list of whole numbers
     */
    public int[] integers(String flag) {
        return integers(flag, v -> parsed(v, Integer::parseInt, "not a whole number"));
    }

    /**
     * A problem with the command line found after it was read (a value out of range, sizes that do
     * not fit the model), reported as {@link #parse}'s own.
     *
     * @param problem what is wrong, naming the flag and value
     * @return the exception to throw (where the process does not exit first)
     */
    public IllegalArgumentException fail(String problem) {
        return problem(problem);
    }

    private static <T> T parsed(String text, Function<String, T> parser, String what) {
        try {
            return parser.apply(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(what);
        }
    }

    private <T> T present(String flag, T value) {
        if (value == null) {
            throw problem(flag + " " + options.get(flag)[0] + " is required");
        }
        return value;
    }

    private String[] declared(String flag) {
        String[] option = options.get(flag);
        if (option == null) { // a benchmark's own mistake, not its user's
            throw new IllegalStateException(command + " declares no option " + flag);
        }
        return option;
    }

    private IllegalArgumentException problem(String problem) {
        if (exits) {
            System.err.println("error: " + problem);
            System.err.println(usage());
            System.exit(USAGE_STATUS);
        }
        return new IllegalArgumentException(problem);
    }
}
