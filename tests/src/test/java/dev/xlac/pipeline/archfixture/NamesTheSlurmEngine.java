package dev.xlac.pipeline.archfixture;

import dev.xlac.pipeline.slurm.ShardPlan;
import java.util.List;

/**
 * A pipeline class outside the Slurm engine's package that reaches into it: what {@code ExecutorRulesTest} must
 * report (the compile run knows an engine only as a {@code CompileExecutor}). Test sources only.
 */
public final class NamesTheSlurmEngine {
  private NamesTheSlurmEngine() {}

  public static int shards(List<ShardPlan.Item> items) {
    return ShardPlan.plan(items, 2).shards().size();
  }
}
