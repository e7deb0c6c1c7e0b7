package dev.xlac.pipeline;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.remote.RemoteSession;
import dev.xlac.compiler.schedule.CompileJob;
import dev.xlac.compiler.schedule.CompileScheduler;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * Graphs in, compiles out: the one place a run's graphs are settled (cached, or failed earlier) or
 * compiled, and the only class that makes a {@link CompileScheduler} (when the first graph needs a
 * compile, so a run where everything is cached starts no worker). Graphs come as a fixed list
 * ({@link #offerAll}) or as a stream while a command runs ({@link #offer}); the compiler's identity,
 * and so the settling, may come later than the first graphs ({@link #start}, from an
 * {@link IdentityProbe}): graphs offered before wait for it.
 *
 * <p>Thread-safe: graphs come from the trace's watcher thread, {@link #start} from the probe,
 * {@link #cancel} from a shutdown hook.
 */
final class CompileFeed implements AutoCloseable {
  private final CacheStore store;
  private final SchedulerSettings settings;
  private final boolean retryFailed;
  private final RunListener listener;
  private final MemoryProbe memory;
  private final RemoteSession remote;
  private final List<CompileWork> waiting = new ArrayList<>();
  private final List<GraphResult> settled = new ArrayList<>();
  private int offered;
  private DriverFactory drivers;
  private CacheResults cache;
  private CompileScheduler scheduler;
  private Throwable failure;
  private boolean cancelled;

  CompileFeed(CacheStore store, SchedulerSettings settings, boolean retryFailed, RunListener listener,
      MemoryProbe memory) {
    this(store, settings, retryFailed, listener, memory, null);
  }

  /** {@code remote}: the run's remote tier session (null: none), read through to and written through to. */
  CompileFeed(CacheStore store, SchedulerSettings settings, boolean retryFailed, RunListener listener,
      MemoryProbe memory, RemoteSession remote) {
    this.remote = remote;
    this.store = store;
    this.settings = settings;
    this.retryFailed = retryFailed;
    this.listener = listener;
    this.memory = memory;
  }

  /** The stream: a graph that is in the cache; the caller offers each fingerprint once. */
  synchronized void offer(GraphFingerprint fp, String module) {
    offered++;
    if (cancelled) {
      settled.add(stopped(new CompileWork.Graph(fp, module)));
    } else if (cache == null) {
      waiting.add(new CompileWork.Graph(fp, module));
    } else {
      route(new CompileWork.Graph(fp, module));
    }
  }

  /**
   * The fixed list: waits for {@link #start} (throwing the probe's failure if it failed), settles
   * every graph, tells the listener the plan, then submits the rest in order and waits for them.
   * Returns every result (settled first, then in submission order).
   */
  List<GraphResult> offerAll(SequencedMap<GraphFingerprint, String> graphs) throws InterruptedException {
    List<CompileWork> work = new ArrayList<>();
    graphs.forEach((fp, module) -> work.add(new CompileWork.Graph(fp, module)));
    return offerAll(work);
  }

  /** As {@link #offerAll(SequencedMap)}, for graphs and recorded requests alike, in the given order. */
  List<GraphResult> offerAll(List<CompileWork> graphs) throws InterruptedException {
    CacheResults known;
    synchronized (this) {
      while (cache == null && failure == null && !cancelled) {
        wait();
      }
      if (failure instanceof Error e) {
        throw e;
      } else if (failure != null) {
        throw (RuntimeException) failure;
      }
      known = cache;
    }
    if (known != null) {
      // the remote tier's artifacts, several at once, outside the feed's lock
      known.prefetch(graphs.stream().filter(w -> w instanceof CompileWork.Graph)
          .map(w -> ((CompileWork.Graph) w).key()).toList());
    }
    synchronized (this) {
      offered += graphs.size();
      List<CompileJob> todo = new ArrayList<>();
      int cached = 0;
      for (CompileWork g : graphs) {
        var done = cancelled ? java.util.Optional.<GraphResult>empty() : cache.settled(g);
        if (done.isPresent()) {
          settled.add(done.get());
          cached += done.get().status() == GraphResult.Status.CACHED ? 1 : 0;
        } else if (cancelled) {
          settled.add(stopped(g));
        } else {
          todo.add(cache.job(g));
        }
      }
      listener.planned(graphs.size(), cached, todo.size(), settings.jobs());
      todo.forEach(this::submit);
    }
    return finish();
  }

  /** The compiler is known: owns {@code factory} from now on, and settles or submits what waited. */
  synchronized void start(DriverFactory factory) {
    drivers = factory;
    if (cancelled) {
      return;
    }
    cache = new CacheResults(store, factory.identity(), retryFailed, remote != null && remote.enabled() ? remote : null);
    waiting.forEach(this::route);
    waiting.clear();
    notifyAll();
  }

  /**
   * The compiler could not be started: a fixed list waiting in {@link #offerAll} throws {@code why} (a
   * RuntimeException or an Error, as the probe met it).
   */
  synchronized void failed(Throwable why) {
    failure = why;
    notifyAll();
  }

  private void route(CompileWork work) {
    cache.settled(work).ifPresentOrElse(settled::add, () -> submit(cache.job(work)));
  }

  private void submit(CompileJob job) {
    if (scheduler == null) {
      scheduler = new CompileScheduler(drivers, settings, cache, listener, memory);
    }
    scheduler.submit(job);
  }

  private static GraphResult stopped(CompileWork work) {
    return new GraphResult(work.key(), work.name(), GraphResult.Status.NOT_RUN, Duration.ZERO, 0, null,
        "not compiled: the run was stopped");
  }

  /** Unique graphs offered so far. */
  synchronized int offered() {
    return offered;
  }

  /** Stops: queued graphs end as not run, running compiles are stopped, what is stored stays. Safe twice. */
  synchronized void cancel() {
    cancelled = true;
    if (scheduler != null) {
      scheduler.cancel();
    }
    waiting.forEach(w -> settled.add(stopped(w)));
    waiting.clear();
    notifyAll();
  }

  /**
   * After the last offer and after {@link #start} (or {@link #cancel}): waits for every compile and
   * returns all results (settled first, then in submission order).
   */
  List<GraphResult> finish() throws InterruptedException {
    CompileScheduler s;
    List<GraphResult> all;
    synchronized (this) {
      if (cache == null && !cancelled) {
        throw new IllegalStateException("finish() before start()");
      }
      s = scheduler;
      all = new ArrayList<>(settled);
    }
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
