package dev.xlac.pipeline.sources.archfixture;

import dev.xlac.pipeline.CompileSetup;

/** A graph source that reaches into the compile run it feeds: what {@code PipelineRulesTest} must report. */
public final class StartsACompile {
  private StartsACompile() {}

  public static boolean local(CompileSetup setup) {
    return setup.executor() != null;
  }
}
