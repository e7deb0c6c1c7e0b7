package dev.xlac.pipeline.sources.archfixture;

import dev.xlac.pipeline.run.RunSpec;

/** A graph source that reaches into {@code xlac run}: what {@code PipelineRulesTest} must report. */
public final class ServesTheCommand {
  private ServesTheCommand() {}

  public static boolean recording(RunSpec spec) {
    return spec.record();
  }
}
