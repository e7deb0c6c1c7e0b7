package dev.xlac.pipeline;

import dev.xlac.core.ExitCode;
import dev.xlac.pipeline.sources.CaptureResult;

/**
 * A one-shot {@code parallel-compile -- COMMAND}: what the command dumped and how it ended, and what
 * became of its graphs.
 *
 * @param report every graph the command dumped (wall time: from the command's start); null when the
 *     command could not run ({@link CaptureResult#notRunnable()})
 */
public record OneShotResult(CaptureResult capture, RunReport report) {
  /**
   * The exit status: the command's when it failed (unless {@code --ignore-script-errors} let it
   * pass), 1 when it dumped nothing, else the report's, or 2 when a dump was unreadable.
   */
  public int exitStatus() {
    if (capture.notRunnable() != null) {
      return capture.notRunnable().status();
    }
    return capture.ending().exitStatus(
        report.exitCode().worst(capture.unreadable() > 0 ? ExitCode.BAD_INPUT : ExitCode.OK));
  }
}
