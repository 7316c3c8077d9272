package io.github.djlllmzoo.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/** Runs the command line in-process and captures its streams. */
final class CliRunner {

    final int exitCode;
    final String out;
    final String err;

    private CliRunner(int exitCode, String out, String err) {
        this.exitCode = exitCode;
        this.out = out;
        this.err = err;
    }

    static CliRunner run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = LlmZoo.execute(args, new PrintWriter(out), new PrintWriter(err));
        return new CliRunner(code, out.toString(), err.toString());
    }
}
