package dev.xlac.pipeline.run.archfixture;

import dev.xlac.pipeline.CompileSetup;

/** An {@code xlac run} class that reaches into the compile runs: what {@code PipelineRulesTest} must report. */
public final class RunsACompile {
  private RunsACompile() {}

  public static boolean local(CompileSetup setup) {
    return setup.executor() != null;
  }
}
