package dev.xlac.pipeline.slurm;

import dev.xlac.cache.CacheStore;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.pipeline.CompileExecutor;
import dev.xlac.pipeline.shard.ShardPlan;
import dev.xlac.pipeline.shard.ShardRun;
import dev.xlac.pipeline.shard.ShardSettings;
import dev.xlac.pipeline.shard.ShardTransport;
import dev.xlac.pipeline.shard.ShardedCompiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code parallel-compile --executor slurm}: the run's shards ({@link ShardedCompiles}) are compiled by one Slurm job
 * array, task I shard I, each on its node ({@link SlurmEngine}); a task that ended without results is submitted
 * again, its shard alone, as a job of its own. A shutdown (Ctrl-C, SIGTERM) cancels every job of the run
 * ({@code scancel}).
 */
public final class SlurmExecutor implements CompileExecutor {
  private final SlurmSettings slurm;

  public SlurmExecutor(SlurmSettings slurm) {
    this.slurm = slurm;
  }

  @Override
  public void checkReady() {
    SlurmClient.requireSbatch(slurm.env().get("PATH"));
  }

  @Override
  public boolean compilesHere() {
    return false;
  }

  /** This one's, with the Slurm commands' over it, as sbatch passes it on to the tasks. */
  @Override
  public Map<String, String> compileEnvironment() {
    Map<String, String> env = new HashMap<>(System.getenv());
    env.putAll(slurm.env());
    return env;
  }

  @Override
  public Compiles start(Run run) {
    return new ShardedCompiles(run, shardSettings(slurm), "Slurm", (dir, transport) -> {
      Path script = dir.resolve("task.sh");
      AtomicFiles.writeString(script, script(slurm.taskCommand(), transport.taskArguments(), dir));
      Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
      return new SlurmEngine(new SlurmClient(slurm.env()), slurm, dir);
    });
  }

  static ShardSettings shardSettings(SlurmSettings slurm) {
    return new ShardSettings(slurm.shards(), slurm.taskRetries(), slurm.sharedDir(), slurm.poll(), slurm.progress());
  }

  /** One run's shards on a job array of {@code client}'s Slurm, whose {@code RUN/task.sh} is written. */
  static ShardRun array(SlurmClient client, SlurmSettings slurm, ShardTransport transport, Path run, ShardPlan plan,
      CacheStore store, CompilerIdentity identity) {
    return array(client, slurm, transport, run, plan, store, identity, ShardRun.RESULTS_GRACE);
  }

  static ShardRun array(SlurmClient client, SlurmSettings slurm, ShardTransport transport, Path run, ShardPlan plan,
      CacheStore store, CompilerIdentity identity, Duration resultsGrace) {
    return new ShardRun(new SlurmEngine(client, slurm, run), transport, plan, store, identity, shardSettings(slurm),
        resultsGrace);
  }

  /** The batch script: the task command for this run, the shard from Slurm's array index. */
  static String script(List<String> taskCommand, Path run) {
    return script(taskCommand, List.of(), run);
  }

  /** As {@link #script(List, Path)}, with the transport's arguments ({@code --remote URL}) after the command's. */
  static String script(List<String> taskCommand, List<String> transportArgs, Path run) {
    StringBuilder s = new StringBuilder("#!/bin/sh\n# xlac parallel-compile --executor slurm: array task I compiles"
        + " shard I of the run in " + run.toString().replace('\n', ' ').replace('\r', ' ') + "\nexec");
    for (String arg : taskCommand) {
      s.append(' ').append(quote(arg));
    }
    for (String arg : transportArgs) {
      s.append(' ').append(quote(arg));
    }
    return s.append(' ').append(quote("--run-dir")).append(' ').append(quote(run.toString())).append('\n').toString();
  }

  static String quote(String arg) {
    return "'" + arg.replace("'", "'\\''") + "'";
  }
}
