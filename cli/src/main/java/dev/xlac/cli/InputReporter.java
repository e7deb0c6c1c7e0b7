package dev.xlac.cli;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.sources.PathSource;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;

/**
 * How commands that read dump files report them: one {@code xlac: ...} line on stderr per note or
 * unreadable file, flushed at once (so it comes before the results on stdout), and the exit code
 * the problems add up to. The one report of {@code hash}, {@code cache add}
 * and {@code parallel-compile PATH...}: paths that could not be searched, the notes, files that
 * could not be read, and "no HLO modules found" when there was nothing at all.
 */
public final class InputReporter {
  private final PrintWriter err;
  private ExitCode exitCode = ExitCode.OK;

  public InputReporter(PrintWriter err) {
    this.err = err;
  }

  /** Reports what reading {@code inputs}' PATHs found wrong; returns the exit code it adds up to. */
  public static ExitCode report(PrintWriter err, PathSource.Result inputs) {
    return new InputReporter(err).report(inputs.notes(), inputs.scanErrors(), inputs.readErrors(),
        inputs.noModules() ? inputs.paths() : null);
  }

  /**
   * Reports, in this order, the paths that could not be searched, the notes, and the files that
   * could not be read; then, when {@code noModulesIn} is not null, that those PATHs held no module.
   * Returns the worst exit code reported so far.
   */
  public ExitCode report(List<String> notes, List<? extends XlacException> scanErrors,
      List<? extends XlacException> readErrors, List<Path> noModulesIn) {
    scanErrors.forEach(this::error);
    notes.forEach(n -> err.println("xlac: " + n));
    err.flush();
    readErrors.forEach(this::error);
    if (noModulesIn != null) {
      err.println("xlac: no HLO modules found in " + String.join(", ", noModulesIn.stream().map(Path::toString)
          .toList()));
      err.flush();
      exitCode = exitCode.worst(ExitCode.BAD_INPUT);
    }
    return exitCode;
  }

  /** Reports one file that could not be read; returns its exit code. */
  public ExitCode error(XlacException e) {
    err.println("xlac: " + e.getMessage());
    err.flush();
    exitCode = exitCode.worst(e.exitCode());
    return e.exitCode();
  }

  /** The worst exit code of what was reported so far. */
  public ExitCode exitCode() {
    return exitCode;
  }
}
