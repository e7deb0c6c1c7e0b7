package dev.xlac.pipeline.archfixture;

import dev.xlac.pipeline.slurm.SlurmSettings;

/**
 * A pipeline class outside the Slurm engine's package that reaches into it: what {@code ExecutorRulesTest} must
 * report (the compile run knows an engine only as a {@code CompileExecutor}). Test sources only.
 */
public final class NamesTheSlurmEngine {
  private NamesTheSlurmEngine() {}

  public static int shards(SlurmSettings slurm) {
    return slurm.shards();
  }
}
