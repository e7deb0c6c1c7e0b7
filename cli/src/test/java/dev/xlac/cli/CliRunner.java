package dev.xlac.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/** Runs the whole CLI in-process and captures what it prints (for the tests of every cli package). */
public record CliRunner(int exitCode, String out, String err) {
  public static CliRunner run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = new Main(new PrintWriter(out, true), new PrintWriter(err, true)).run(args);
    return new CliRunner(code, out.toString(), err.toString());
  }

  /** As {@link #run}, with the whole command tree built whatever the arguments name. */
  static CliRunner runWithWholeTree(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = new Main(new PrintWriter(out, true), new PrintWriter(err, true)).runWithWholeTree(args);
    return new CliRunner(code, out.toString(), err.toString());
  }
}
