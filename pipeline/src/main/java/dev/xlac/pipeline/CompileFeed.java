package dev.xlac.cli.compile;

import dev.xlac.cache.CacheStore;
import dev.xlac.compiler.schedule.CompileListener;
import dev.xlac.compiler.schedule.CompileScheduler;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.hlo.GraphFingerprint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Graphs in, compiles out, while they keep arriving: each graph offered (already in the cache) is
 * settled at once (cached, or failed earlier) or submitted to a streaming {@link CompileScheduler}.
 * The compiler's identity, and so the scheduler, may come later than the first graphs (it is
 * probed while the command starts); graphs offered before wait for {@link #start}.
 *
 * <p>Thread-safe: graphs come from the trace's watcher thread, {@link #start} from the probe,
 * {@link #cancel} from a shutdown hook.
 */
final class CompileFeed implements AutoCloseable {
  private final CacheStore store;
  private final SchedulerSettings settings;
  private final boolean retryFailed;
  private final CompileListener progress;
  private final Map<GraphFingerprint, String> waiting = new LinkedHashMap<>();
  private final List<GraphResult> settled = new ArrayList<>();
  private int offered;
  private DriverFactory drivers;
  private CompileCache cache;
  private CompileScheduler scheduler;
  private boolean cancelled;

  CompileFeed(CacheStore store, SchedulerSettings settings, boolean retryFailed, CompileListener progress) {
    this.store = store;
    this.settings = settings;
    this.retryFailed = retryFailed;
    this.progress = progress;
  }

  /** A graph that is in the cache; the caller offers each fingerprint once. */
  synchronized void offer(GraphFingerprint fp, String module) {
    offered++;
    if (cancelled) {
      settled.add(stopped(fp, module));
    } else if (scheduler == null) {
      waiting.put(fp, module);
    } else {
      route(fp, module);
    }
  }

  /** The compiler is known: starts the scheduler (owning {@code factory} from now on) and feeds it what waited. */
  synchronized void start(DriverFactory factory) {
    drivers = factory;
    if (cancelled) {
      return;
    }
    cache = new CompileCache(store, factory.identity(), retryFailed);
    scheduler = new CompileScheduler(factory, settings, cache, progress, MemoryProbe.system());
    waiting.forEach(this::route);
    waiting.clear();
  }

  private void route(GraphFingerprint fp, String module) {
    cache.settled(fp, module).ifPresentOrElse(settled::add, () -> scheduler.submit(cache.job(fp, module)));
  }

  private static GraphResult stopped(GraphFingerprint fp, String module) {
    return new GraphResult(fp, module, GraphResult.Status.NOT_RUN, Duration.ZERO, 0, null,
        "not compiled: the run was stopped");
  }

  /** Unique graphs offered so far. */
  synchronized int offered() {
    return offered;
  }

  /** Graphs that needed no compile (cached, or failed in an earlier run). */
  synchronized List<GraphResult> settled() {
    return List.copyOf(settled);
  }

  /** Stops: queued graphs end as not run, running compiles are stopped, what is stored stays. Safe twice. */
  synchronized void cancel() {
    cancelled = true;
    if (scheduler != null) {
      scheduler.cancel();
    }
    waiting.forEach((fp, module) -> settled.add(stopped(fp, module)));
    waiting.clear();
  }

  /**
   * After the last offer and after {@link #start}: waits for every compile and returns all results
   * (settled first, then in submission order).
   */
  List<GraphResult> finish() throws InterruptedException {
    CompileScheduler s;
    synchronized (this) {
      if (scheduler == null && !cancelled) {
        throw new IllegalStateException("finish() before start()");
      }
      s = scheduler;
    }
    List<GraphResult> all = new ArrayList<>(settled());
    if (s != null) {
      all.addAll(s.finish());
    }
    return all;
  }

  /** Stops the workers if {@link #finish} was not reached, then closes the driver factory. */
  @Override
  public void close() throws InterruptedException {
    CompileScheduler s;
    DriverFactory d;
    synchronized (this) {
      s = scheduler;
      d = drivers;
    }
    try {
      if (s != null) {
        s.close();
      }
    } finally {
      if (d != null) {
        d.close();
      }
    }
  }
}
