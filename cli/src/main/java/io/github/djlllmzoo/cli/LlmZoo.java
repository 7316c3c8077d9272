package io.github.djlllmzoo.cli;

import java.io.PrintWriter;
import java.nio.file.NoSuchFileException;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code llmzoo} command line: {@code generate}, {@code score}, {@code models}, {@code finetune},
 * {@code make-default-model}, {@code serve}, {@code bench}, {@code bench-constrained}, {@code init-random}. Results go to stdout, logs and
 * errors to stderr; every failure prints one line {@code error: ...} (the stack trace only with
 * {@code --debug}) and exits non-zero.
 */
@Command(
        name = "llmzoo",
        mixinStandardHelpOptions = true,
        version = "llmzoo 0.1.0",
        description = "GPT-2 and Llama language models on DJL blocks.",
        subcommands = {
            GenerateCommand.class,
            ScoreCommand.class,
            ModelsCommand.class,
            FineTuneCommand.class,
            MakeDefaultModelCommand.class,
            ServeCommand.class,
            BenchCommand.class,
            BenchConstrainedCommand.class,
            BenchAdaptersCommand.class,
            InitRandomCommand.class,
            MergeAdapterCommand.class,
            ConvertCommand.class
        })
public final class LlmZoo implements Runnable {

    @Option(names = "--debug", description = "Print stack traces of errors.", scope = CommandLine.ScopeType.INHERIT)
    boolean debug;

    @Spec CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(
                spec.commandLine(), "missing command: " + commands(spec.commandLine()) + " (see 'llmzoo --help')");
    }

    /**
     * Runs the command line.
     *
     * @param args the arguments
     */
    public static void main(String[] args) {
        System.exit(execute(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
    }

    /**
     * Runs the command line with the given streams (tests call this).
     *
     * @param args the arguments
     * @param out where results go
     * @param err where errors go
     * @return the exit code: 0 on success, 1 on failure, 2 on a usage error
     */
    public static int execute(String[] args, PrintWriter out, PrintWriter err) {
        boolean debug = java.util.Arrays.asList(args).contains("--debug");
        CommandLine cli = new CommandLine(new LlmZoo());
        cli.setOut(out);
        cli.setErr(err);
        cli.setParameterExceptionHandler(
                (e, a) -> {
                    err.println("error: " + usageError(e));
                    if (debug) {
                        e.printStackTrace(err);
                    }
                    err.flush();
                    return 2;
                });
        cli.setExecutionExceptionHandler(
                (e, c, r) -> {
                    err.println("error: " + describe(e));
                    if (debug) {
                        e.printStackTrace(err);
                    }
                    err.flush();
                    return 1;
                });
        int code = cli.execute(args);
        out.flush();
        err.flush();
        return code;
    }

    /**
     * The one line a usage error prints: picocli's message without its "Error: " prefix,
     * lower-cased like this command line's own; for a mistyped command the commands and the
     * closest one, for a mistyped option the closest option.
     */
    private static String usageError(ParameterException e) {
        if (e instanceof UnmatchedArgumentException unmatched && !unmatched.getUnmatched().isEmpty()) {
            CommandLine where = unmatched.getCommandLine();
            String first = unmatched.getUnmatched().get(0);
            List<String> suggestions = unmatched.getSuggestions();
            String closest = suggestions.isEmpty() ? "" : " (did you mean '" + suggestions.get(0) + "'?)";
            String command = where.getCommandSpec().qualifiedName();
            if (unmatched.isUnknownOption()) {
                return "unknown option '" + first + "' for " + command + closest + "; see '" + command + " --help'";
            }
            if (!where.getSubcommands().isEmpty()) {
                return "unknown command '" + first + "'" + closest + "; the commands are " + commands(where);
            }
        }
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        if (message.startsWith("Error: ")) {
            message = message.substring("Error: ".length());
        }
        if (message.length() > 1 && Character.isUpperCase(message.charAt(0)) && Character.isLowerCase(message.charAt(1))) {
            message = Character.toLowerCase(message.charAt(0)) + message.substring(1);
        }
        return message.replace('\n', ' ');
    }

    private static String commands(CommandLine cli) {
        return String.join(", ", cli.getSubcommands().keySet());
    }

    private static String describe(Throwable e) {
        if (e instanceof NoSuchFileException missing && missing.getReason() == null) {
            return missing.getFile() + ": no such file or directory";
        }
        String message = e.getMessage();
        if (message == null || message.isBlank()) {
            return e.getClass().getSimpleName();
        }
        return message.replace('\n', ' ');
    }
}
