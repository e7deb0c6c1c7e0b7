package dev.xlac.pipeline.explain.archfixture;

import dev.xlac.pipeline.RunReport;

/**
 * An explaining class that reaches back into the runs it explains: a package circle, what {@code DiffRulesTest} must
 * report. Test sources only.
 */
public final class ExplainsFromTheRun {
  private ExplainsFromTheRun() {}

  public static dev.xlac.core.ExitCode exitCode(RunReport report) {
    return report.exitCode();
  }
}
