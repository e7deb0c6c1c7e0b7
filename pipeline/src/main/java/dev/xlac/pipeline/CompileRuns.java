package dev.xlac.cli.compile;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.GraphIngest;
import dev.xlac.cli.InputReporter;
import dev.xlac.compiler.schedule.CompileJob;
import dev.xlac.compiler.schedule.CompileListener;
import dev.xlac.compiler.schedule.CompileScheduler;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.compiler.schedule.RunReport;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.hlo.GraphFingerprint;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;

/**
 * One {@code parallel-compile} run against the cache. It lives in cli because it is the adapter
 * between {@code cache} and {@code compiler-drivers}, which do not know each other: the cache
 * says which graphs lack an artifact, the scheduler compiles them, and each result goes back into
 * the cache the moment it is known ({@link CompileCache}).
 */
final class CacheCompileRun {
  /** @param inputs the exit code of reading the PATH arguments (2 when a file was unreadable) */
  record Outcome(RunReport report, ExitCode inputs) {}

  private final CacheStore store;
  private final DriverFactory drivers;
  private final FutureTask<CompilerIdentity> identity;
  private final PrintWriter err;

  /**
   * Starts learning the compiler's identity at once, on a thread of its own: without a probe
   * record that loads the plugin in the first worker (and hashes it), which then overlaps reading
   * and storing the PATHs.
   */
  CacheCompileRun(CacheStore store, DriverFactory drivers, PrintWriter err) {
    this.store = store;
    this.drivers = drivers;
    this.identity = new FutureTask<>(drivers::identity);
    Thread.ofPlatform().daemon().name("xlac-identity").start(identity);
    this.err = err;
  }

  private CompilerIdentity identity() throws InterruptedException {
    try {
      return identity.get();
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      if (e.getCause() instanceof Error r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  Outcome run(List<Path> paths, SchedulerSettings settings, boolean retryFailed, ProgressPrinter progress)
      throws InterruptedException {
    try {
      return runAfterIdentity(paths, settings, retryFailed, progress);
    } finally {
      awaitIdentityQuietly(); // so that no worker starts after the factory was closed
    }
  }

  private void awaitIdentityQuietly() throws InterruptedException {
    try {
      identity.get();
    } catch (ExecutionException e) {
      // reported by identity() where it mattered
    }
  }

  private Outcome runAfterIdentity(List<Path> paths, SchedulerSettings settings, boolean retryFailed,
      ProgressPrinter progress) throws InterruptedException {
    long start = System.nanoTime();
    ExitCode inputs = ExitCode.OK;
    Map<GraphFingerprint, String> candidates = new TreeMap<>();
    if (!paths.isEmpty()) {
      inputs = ingest(paths, candidates);
    } else {
      for (GraphInfo g : store.graphs()) {
        candidates.put(g.fingerprint(), g.moduleName());
      }
    }
    CompileCache cache = new CompileCache(store, identity(), retryFailed);
    List<GraphResult> results = new ArrayList<>();
    List<CompileJob> todo = new ArrayList<>();
    candidates.forEach((fp, module) -> cache.settled(fp, module).ifPresentOrElse(results::add,
        () -> todo.add(cache.job(fp, module))));
    progress.plan(candidates.size(), (int) results.stream().filter(r -> r.status() == GraphResult.Status.CACHED)
        .count(), todo.size(), settings.jobs());
    if (!todo.isEmpty()) {
      results.addAll(compile(todo, cache, settings, progress));
    }
    progress.close();
    results.sort(Comparator.comparing(GraphResult::moduleName).thenComparing(GraphResult::fingerprint));
    return new Outcome(new RunReport(results, Duration.ofNanos(System.nanoTime() - start), settings.jobs()), inputs);
  }

  private List<GraphResult> compile(List<CompileJob> todo, CompileCache cache, SchedulerSettings settings,
      CompileListener progress) throws InterruptedException {
    // Ctrl-C: stop the compiles, keep what is stored, and let this thread close the cache.
    try (ShutdownCancel interrupt = new ShutdownCancel();
        CompileScheduler scheduler = new CompileScheduler(drivers, settings, cache, progress, MemoryProbe.system())) {
      interrupt.cancels(scheduler::cancel);
      todo.forEach(scheduler::submit);
      return scheduler.finish();
    }
  }

  /** Stores the modules in {@code paths} as graphs and collects them; unreadable files are reported. */
  private ExitCode ingest(List<Path> paths, Map<GraphFingerprint, String> into) throws InterruptedException {
    GraphIngest.Result r = GraphIngest.ingest(store, paths);
    InputReporter report = new InputReporter(err);
    report.errors(r.scanErrors());
    report.notes(r.notes());
    report.errors(r.readErrors());
    r.graphs().forEach(into::putIfAbsent);
    if (r.graphs().isEmpty() && r.errors().isEmpty()) {
      report.noModulesFound(paths);
    }
    return report.exitCode();
  }
}
