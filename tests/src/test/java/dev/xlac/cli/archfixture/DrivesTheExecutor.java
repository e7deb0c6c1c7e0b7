package dev.xlac.cli.archfixture;

import dev.xlac.pipeline.CompileExecutor;
import dev.xlac.pipeline.shard.ShardPlan;
import java.util.List;

/**
 * A CLI class that runs the executor's steps itself (and plans Slurm shards) instead of leaving the run to
 * {@code CompileRuns}: what {@code ExecutorRulesTest} must report. Test sources only.
 */
public final class DrivesTheExecutor {
  private DrivesTheExecutor() {}

  public static int compile(CompileExecutor executor, CompileExecutor.Run run) {
    try (CompileExecutor.Compiles compiles = executor.start(run)) {
      return compiles.jobs() + new ShardPlan(List.of()).shards().size();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 0;
    }
  }
}
