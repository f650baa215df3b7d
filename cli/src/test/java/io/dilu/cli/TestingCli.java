package io.dilu.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/** Runs {@code ./dilu}'s Java commands (simulate, load, profile, bench) in the test's JVM, keeping what they print. */
final class TestingCli {

    private TestingCli() {}

    /** One run: its exit status and what it wrote to standard output and error. */
    record Run(int exit, String out, String err) {}

    static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new Main());
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int exit = cli.execute(args);
        return new Run(exit, out.toString(), err.toString());
    }
}
