package dev.xlac.cli;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;

/**
 * How commands that read dump files report them: one {@code xlac: ...} line on stderr per note or
 * unreadable file, flushed at once (so it comes before the results on stdout), and the exit code
 * the problems add up to. Shared by {@code hash} ({@link ModuleInputs}), {@code cache add} and
 * {@code parallel-compile PATH...}.
 */
public final class InputReporter {
  private final PrintWriter err;
  private ExitCode exitCode = ExitCode.OK;

  public InputReporter(PrintWriter err) {
    this.err = err;
  }

  /** Notes about skipped files. */
  public void notes(List<String> notes) {
    notes.forEach(n -> err.println("xlac: " + n));
    err.flush();
  }

  /** Reports files that could not be read. */
  public void errors(List<? extends XlacException> errors) {
    errors.forEach(this::error);
  }

  /** Reports one file that could not be read; returns its exit code. */
  public ExitCode error(XlacException e) {
    err.println("xlac: " + e.getMessage());
    err.flush();
    exitCode = exitCode.worst(e.exitCode());
    return e.exitCode();
  }

  /** The arguments held no module at all (and nothing failed to be read): bad input. */
  public void noModulesFound(List<Path> paths) {
    err.println("xlac: no HLO modules found in " + String.join(", ", paths.stream().map(Path::toString).toList()));
    err.flush();
    exitCode = exitCode.worst(ExitCode.BAD_INPUT);
  }

  /** The worst exit code of what was reported so far. */
  public ExitCode exitCode() {
    return exitCode;
  }
}
