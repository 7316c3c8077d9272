package io.github.djlllmzoo.examples;

import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code llmzoo} command line: {@code generate}, {@code score}, {@code models}, {@code finetune},
 * {@code make-default-model}, {@code serve}, {@code bench}, {@code init-random}. Results go to stdout, logs and
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
            InitRandomCommand.class
        })
public final class LlmZoo implements Runnable {

    @Option(names = "--debug", description = "Print stack traces of errors.", scope = CommandLine.ScopeType.INHERIT)
    boolean debug;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(
                new CommandLine(this), "missing command: generate, score, models, finetune, serve, bench, ... (see --help)");
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
                    err.println("error: " + e.getMessage());
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

    private static String describe(Throwable e) {
        String message = e.getMessage();
        if (message == null || message.isBlank()) {
            return e.getClass().getSimpleName();
        }
        return message.replace('\n', ' ');
    }
}
