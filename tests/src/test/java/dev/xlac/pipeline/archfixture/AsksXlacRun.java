package dev.xlac.pipeline.archfixture;

import dev.xlac.pipeline.run.RunResult;

/**
 * A compile-side class that reaches into {@code xlac run} (what both share lives below both, in {@code .recording}):
 * what {@code PipelineRulesTest} must report. Test sources only.
 */
public final class AsksXlacRun {
  private AsksXlacRun() {}

  public static int exitStatus(RunResult result) {
    return result.exitStatus();
  }
}
