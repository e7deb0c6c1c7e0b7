package dev.xlac.pipeline;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RemotePolicy;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.compiler.schedule.SchedulerSettings;

/**
 * What every compile run needs, whatever its graphs come from ({@link CompileRuns}).
 *
 * @param cache opens the cache when the run is ready for it (after a prestarted worker began)
 * @param drivers the compiler
 * @param retryFailed compile again graphs whose compile failed in an earlier run
 * @param listener progress; {@link RunListener#NONE} for none
 * @param memory the memory the scheduler admits compiles by
 * @param remote whether the run reads through to and writes through to the cache's remote tier
 * @param executor where the compiles run ({@link LocalExecutor}, {@link dev.xlac.pipeline.slurm.SlurmExecutor})
 */
public record CompileSetup(CacheStore.Opener cache, DriverSource drivers, SchedulerSettings settings, boolean retryFailed,
    RunListener listener, MemoryProbe memory, RemotePolicy remote, CompileExecutor executor) {

  /** A run that compiles in this process's workers. */
  public CompileSetup(CacheStore.Opener cache, DriverSource drivers, SchedulerSettings settings, boolean retryFailed,
      RunListener listener, MemoryProbe memory, RemotePolicy remote) {
    this(cache, drivers, settings, retryFailed, listener, memory, remote, LocalExecutor.INSTANCE);
  }

  /** This run, its compiles on {@code other}. */
  public CompileSetup withExecutor(CompileExecutor other) {
    return new CompileSetup(cache, drivers, settings, retryFailed, listener, memory, remote, other);
  }

  /** A run that uses the cache's remote tier when it has one ({@link RemotePolicy#USE}). */
  public CompileSetup(CacheStore.Opener cache, DriverSource drivers, SchedulerSettings settings, boolean retryFailed,
      RunListener listener, MemoryProbe memory) {
    this(cache, drivers, settings, retryFailed, listener, memory, RemotePolicy.USE);
  }
}
