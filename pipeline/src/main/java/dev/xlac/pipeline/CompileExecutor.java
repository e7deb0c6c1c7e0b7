package dev.xlac.pipeline;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.TieredCache;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.compiler.schedule.SchedulerSettings;
import java.util.List;
import java.util.Map;

/**
 * Where a compile run's compiles run: the one step of {@link CompileRuns} that differs between engines. The run
 * collects the programs, settles each against the cache, hands those still lacking an artifact to the executor
 * ({@link Compiles#submit}), takes back one result per program ({@link Compiles#finish}), then explains and
 * reports. {@link LocalExecutor} compiles in this process's workers, {@link dev.xlac.pipeline.slurm.SlurmExecutor} on a Slurm job array,
 * {@link dev.xlac.pipeline.ray.RayExecutor} as Ray jobs. A sharding engine is a {@link dev.xlac.pipeline.shard.ShardEngine} under
 * {@link dev.xlac.pipeline.shard.ShardedCompiles}, plus a {@link dev.xlac.pipeline.shard.ShardTransport} if none reaches its nodes.
 */
public interface CompileExecutor {
  /** Checked before the run opens anything, so that a missing engine is one line (ENVIRONMENT), said first. */
  default void checkReady() {}

  /**
   * Whether the compiles run in this process's workers: then the first worker starts early, and the run's progress
   * counts compiles. Otherwise no worker starts here and the executor reports its own progress.
   */
  boolean compilesHere();

  /** The environment the compiles run in: a recorded request's plugin identity text is computed in it. */
  Map<String, String> compileEnvironment();

  /** Starts compiling for one run, when its first program needs a compile (a run where all is cached starts none). */
  Compiles start(Run run);

  /** What an executor may use of the run: everything stays owned (and closed) by {@link CompileRuns}. */
  record Run(CacheStore store, DriverFactory drivers, CacheResults cache, SchedulerSettings settings,
      RunListener listener, MemoryProbe memory, TieredCache tiers) {}

  /** One run's compiles. Thread-safe: programs come from the settling threads, {@link #cancel} from a shutdown. */
  interface Compiles extends AutoCloseable {
    /** One program the cache has no artifact for; it may compile at once or when {@link #finish} is called. */
    void submit(CompileWork work);

    /** After the last submit: waits for every compile and returns one result per program submitted. */
    List<GraphResult> finish() throws InterruptedException;

    /** Stops: what has not compiled ends as not run ("the run was stopped"), what is stored stays. Safe twice. */
    void cancel();

    /** The parallel jobs the report names (after {@link #finish}). */
    int jobs();

    /** Stops what {@link #finish} did not wait for. */
    @Override
    void close() throws InterruptedException;
  }
}
