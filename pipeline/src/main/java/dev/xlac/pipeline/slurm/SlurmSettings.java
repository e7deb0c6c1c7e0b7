package dev.xlac.pipeline.slurm;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * How {@code parallel-compile --executor slurm} distributes a run ({@link SlurmExecutor}).
 *
 * @param shards the most array tasks (a run with fewer graphs to compile submits fewer)
 * @param sbatchArgs given to every {@code sbatch} after xlac's own ({@code --sbatch-arg}), so they may override them
 * @param taskRetries how many times a shard whose task ended without results is submitted again
 * @param sharedDir a directory every node sees; each run makes a directory of its own in it
 * @param taskCommand what a task runs, before {@code --run-dir RUN} (the launcher, {@code compile-shard} and the
 *     compile options to pass on)
 * @param env the environment for Slurm's commands (PATH, SLURM_CONF); the tasks get the submitter's, as sbatch
 *     passes it on by default
 * @param poll how often the queue is looked at
 * @param progress one line at a time, for stderr
 */
public record SlurmSettings(int shards, List<String> sbatchArgs, int taskRetries, Path sharedDir,
    List<String> taskCommand, Map<String, String> env, Duration poll, Consumer<String> progress) {
  public static final Duration DEFAULT_POLL = Duration.ofSeconds(2);

  public SlurmSettings {
    sbatchArgs = List.copyOf(sbatchArgs);
    taskCommand = List.copyOf(taskCommand);
    env = Map.copyOf(env);
  }
}
