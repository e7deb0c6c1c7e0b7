package dev.xlac.pipeline;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.TieredCache;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.ProgramKey;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * Graphs in, compiles out: the one place a run's graphs are settled (cached, or failed earlier) or
 * handed to the run's {@link CompileExecutor} (started when the first graph needs a compile, so a run
 * where everything is cached starts no worker). Graphs come as a fixed list
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
  private final TieredCache tiers;
  private final CompileExecutor executor;
  private final List<CompileWork> waiting = new ArrayList<>();
  /**
   * Graphs being settled outside the lock (a remote read may take long): {@link #cancel} ends them as not run and
   * empties this, so a settlement that ends after it is dropped; {@link #finish} waits for the rest.
   */
  private final Map<ProgramKey, CompileWork> settling = new LinkedHashMap<>();
  private final List<GraphResult> settled = new ArrayList<>();
  private int offered;
  private DriverFactory drivers;
  private CacheResults cache;
  private CompileExecutor.Compiles compiles;
  private Throwable failure;
  private boolean cancelled;

  CompileFeed(CacheStore store, SchedulerSettings settings, boolean retryFailed, RunListener listener,
      MemoryProbe memory) {
    this(store, settings, retryFailed, listener, memory, null);
  }

  /** {@code tiers}: the run's cache, both tiers (null: the local cache alone), looked up and stored into. */
  CompileFeed(CacheStore store, SchedulerSettings settings, boolean retryFailed, RunListener listener,
      MemoryProbe memory, TieredCache tiers) {
    this(store, settings, retryFailed, listener, memory, tiers, LocalExecutor.INSTANCE);
  }

  /** {@code executor}: where the graphs that need a compile are compiled. */
  CompileFeed(CacheStore store, SchedulerSettings settings, boolean retryFailed, RunListener listener,
      MemoryProbe memory, TieredCache tiers, CompileExecutor executor) {
    this.executor = executor;
    this.tiers = tiers;
    this.store = store;
    this.settings = settings;
    this.retryFailed = retryFailed;
    this.listener = listener;
    this.memory = memory;
  }

  /**
   * The stream: a graph that is in the cache; the caller offers each fingerprint once. Settling it (which may read
   * the remote tier) happens outside the feed's lock, so a slow remote never holds up {@link #cancel}.
   */
  void offer(GraphFingerprint fp, String module) {
    CompileWork work = new CompileWork.Graph(fp, module);
    CacheResults known;
    synchronized (this) {
      offered++;
      if (cancelled) {
        settled.add(stopped(work));
        return;
      } else if (cache == null) {
        waiting.add(work);
        return;
      }
      known = cache;
      settling.put(work.key(), work);
    }
    route(known, work);
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
      List<CompileWork> todo = new ArrayList<>();
      int cached = 0;
      for (CompileWork g : graphs) {
        var done = cancelled ? java.util.Optional.<GraphResult>empty() : cache.settled(g);
        if (done.isPresent()) {
          settled.add(done.get());
          cached += done.get().status() == GraphResult.Status.CACHED ? 1 : 0;
        } else if (cancelled) {
          settled.add(stopped(g));
        } else {
          todo.add(g);
        }
      }
      listener.planned(graphs.size(), cached, todo.size(), settings.jobs());
      todo.forEach(this::submit);
    }
    return finish();
  }

  /**
   * The compiler is known: owns {@code factory} from now on, and settles or submits what waited (settling outside
   * the feed's lock, as {@link #offer} does).
   */
  void start(DriverFactory factory) {
    CacheResults known;
    List<CompileWork> queued;
    synchronized (this) {
      drivers = factory;
      if (cancelled) {
        return;
      }
      cache = new CacheResults(tiers != null ? tiers : TieredCache.localOnly(store), factory.identity(), retryFailed);
      known = cache;
      queued = new ArrayList<>(waiting);
      waiting.forEach(w -> settling.put(w.key(), w));
      waiting.clear();
      notifyAll();
    }
    try {
      queued.forEach(w -> route(known, w));
    } catch (RuntimeException | Error e) {
      synchronized (this) { // finish() must not wait for graphs no one settles now
        queued.forEach(w -> settling.remove(w.key()));
        notifyAll();
      }
      throw e;
    }
  }

  /**
   * The compiler could not be started: a fixed list waiting in {@link #offerAll} throws {@code why} (a
   * RuntimeException or an Error, as the probe met it).
   */
  synchronized void failed(Throwable why) {
    failure = why;
    notifyAll();
  }

  /** Settles {@code work} (outside the lock), then records it or submits it, unless {@link #cancel} ended it meanwhile. */
  private void route(CacheResults known, CompileWork work) {
    Optional<GraphResult> done;
    synchronized (this) {
      if (!settling.containsKey(work.key())) { // cancelled before its turn: ended as not run already
        return;
      }
    }
    try {
      done = known.settled(work);
    } catch (RuntimeException | Error e) {
      synchronized (this) {
        settling.remove(work.key());
        notifyAll();
      }
      throw e;
    }
    synchronized (this) {
      if (settling.remove(work.key()) == null) {
        return; // cancel() ended it as not run while it was being settled
      }
      if (done.isPresent()) {
        settled.add(done.get());
      } else {
        submit(work);
      }
      notifyAll();
    }
  }

  private void submit(CompileWork work) {
    if (compiles == null) {
      compiles = executor.start(new CompileExecutor.Run(store, drivers, cache, settings, listener, memory, tiers));
    }
    compiles.submit(work);
  }

  private static GraphResult stopped(CompileWork work) {
    return new GraphResult(work.key(), work.name(), GraphResult.Status.NOT_RUN, Duration.ZERO, 0, null,
        "not compiled: the run was stopped");
  }

  /** The parallel jobs the report names: the executor's, once it started; else the settings'. */
  synchronized int jobs() {
    return compiles == null ? settings.jobs() : compiles.jobs();
  }

  /** Unique graphs offered so far. */
  synchronized int offered() {
    return offered;
  }

  /** Stops: queued graphs end as not run, running compiles are stopped, what is stored stays. Safe twice. */
  synchronized void cancel() {
    cancelled = true;
    if (compiles != null) {
      compiles.cancel();
    }
    waiting.forEach(w -> settled.add(stopped(w)));
    waiting.clear();
    settling.values().forEach(w -> settled.add(stopped(w))); // a remote read may still be under way
    settling.clear();
    notifyAll();
  }

  /**
   * After the last offer and after {@link #start} (or {@link #cancel}): waits for every compile and
   * returns all results (settled first, then in submission order).
   */
  List<GraphResult> finish() throws InterruptedException {
    CompileExecutor.Compiles s;
    List<GraphResult> all;
    synchronized (this) {
      if (cache == null && !cancelled) {
        throw new IllegalStateException("finish() before start()");
      }
      while (!settling.isEmpty()) { // graphs another thread is settling; cancel() empties this at once
        wait();
      }
      s = compiles;
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
    CompileExecutor.Compiles s;
    DriverFactory d;
    synchronized (this) {
      s = compiles;
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
