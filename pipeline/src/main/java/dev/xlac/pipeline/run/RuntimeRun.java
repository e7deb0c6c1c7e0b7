package dev.xlac.pipeline.run;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestIngest;
import dev.xlac.cache.layout.PjrtRecordSpool;
import dev.xlac.capture.CommandNotRunnableException;
import dev.xlac.capture.CommandRunner;
import dev.xlac.capture.NotRunnable;
import dev.xlac.capture.ProxyEnvironment;
import dev.xlac.core.XlacException;
import dev.xlac.core.concurrent.Futures;
import dev.xlac.core.io.FileTrees;
import dev.xlac.core.io.PrivateFiles;
import dev.xlac.pipeline.explain.WhyMissed;
import dev.xlac.pipeline.recording.OrphanedSpools;
import dev.xlac.pipeline.recording.RealPlugin;
import dev.xlac.pipeline.recording.StatsDirectories;
import dev.xlac.runtime.LayoutManifest;
import dev.xlac.runtime.PreloadList;
import dev.xlac.runtime.RunStatistics;
import dev.xlac.runtime.RuntimeLibrary;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.FutureTask;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * {@code xlac run}: the user's unmodified training command, with xlac's runtime proxy in front of
 * its PJRT plugin, serving the executables in the cache.
 *
 * <ol>
 *   <li>Before the command starts, everything that can be known in advance is checked (exit 3, one
 *       line): the real plugin ({@link RealPlugin}: a memo makes this free for an unchanged plugin),
 *       a {@code --layout} made for another plugin.</li>
 *   <li>The command starts at once with the proxy's environment ({@link ProxyEnvironment}). While
 *       its interpreter starts, the cache is opened for writing, the runtime layout
 *       {@code CACHE/runtime/pjrt} is brought up to date for this plugin (incrementally: entries
 *       whose header matches are kept) and the cache is closed again, so its lock is never held
 *       while training runs. A compile that arrives before its entry is written is simply compiled.
 *       When the cache cannot be opened (another writer holds it), the layout is served as it is.</li>
 *   <li>When the command has ended: the proxy's statistics are read; the hits are recorded in the
 *       cache, a recording ({@code --record}) is put into it, and layout entries the proxy could not
 *       serve are deleted so the next run writes them again.</li>
 * </ol>
 *
 * Nothing is printed here: {@code notices} gets each problem line as it happens, the result has the
 * rest.
 */
public final class RuntimeRun {
  private RuntimeRun() {}

  public static RunResult run(RunSpec spec, CacheLocker cache, Consumer<String> notices)
      throws InterruptedException {
    return run(spec, cache, notices, RuntimeLibrary::path, null);
  }

  /**
   * As {@link #run(RunSpec, CacheLocker, Consumer)}, writing the launch plan of {@code plan} at the end
   * ({@link FastStart}).
   */
  public static RunResult run(RunSpec spec, CacheLocker cache, Consumer<String> notices, FastStart.Key plan)
      throws InterruptedException {
    return run(spec, cache, notices, RuntimeLibrary::path, plan);
  }

  /**
   * Finishes the run of a command that {@code xlac-fast-start} started from a launch plan ({@link FastStart}): as
   * the end of {@link #run}, with the plugin, layout and statistics the plan named.
   */
  public static RunResult finishAdopted(RunSpec spec, CacheLocker cache, Consumer<String> notices,
      FastStart.Adopted adopted, FastStart.Key plan) throws InterruptedException {
    try {
      // The plugin the plan named, never identified again: moved away or replaced during the run, it costs the
      // stamp and the plan (the next run identifies it), never the finish.
      Path given = ServedCommand.pluginPath(spec.plugin(), spec.env()).toAbsolutePath();
      Optional<RealPlugin> named = RealPlugin.named(given, RealPlugin.memoDir(spec.cacheDir()), adopted.plugin());
      RealPlugin plugin = named.orElseGet(() -> new RealPlugin(given, "", "", -1, -1, -1, -1));
      boolean samePlugin = named.isPresent() && plugin.unchanged();
      // The cache the plan's conditions named (its user.home, its XLAC_CACHE_DIR): only that one is current.
      boolean sameCache = adopted.db() != null
          && adopted.db().equals(spec.cacheDir().toAbsolutePath().normalize().resolve("db"));
      FastStart.Writer writer = plan == null ? null : new FastStart.Writer(plan, RuntimeLibrary::path);
      return finish(spec, cache, writer == null ? notices : writer.watch(notices), plugin, true,
          RuntimeCache.layoutDir(spec.cacheDir()), adopted.stats(), null, samePlugin && sameCache ? CURRENT : null,
          adopted.outcome(), adopted.wall(), writer, RuntimeRemote.NONE); // plans are only for caches without a remote
    } finally {
      FileTrees.deleteTreeQuietly(adopted.stats());
    }
  }

  /** As {@link #run(RunSpec, CacheLocker, Consumer)}, with the proxy library from {@code proxyLibrary} (tests). */
  static RunResult run(RunSpec spec, CacheLocker cache, Consumer<String> notices, Supplier<Path> proxyLibrary)
      throws InterruptedException {
    return run(spec, cache, notices, proxyLibrary, null);
  }

  static RunResult run(RunSpec spec, CacheLocker cache, Consumer<String> notices, Supplier<Path> proxyLibrary,
      FastStart.Key planKey) throws InterruptedException {
    FastStart.Writer plan = null;
    if (spec.command().isEmpty()) {
      throw XlacException.badInput("no command given: write it after '--', e.g. xlac run -- python train.py");
    }
    // The proxy library (hashed, and unpacked once) on a second thread while the plugin is identified: both
    // come before the command can start.
    FutureTask<Path> proxyTask = new FutureTask<>(proxyLibrary::get);
    Thread.ofPlatform().daemon().name("xlac-proxy-library").start(proxyTask);
    Path pluginPath = ServedCommand.pluginPath(spec.plugin(), spec.env());
    boolean[] fresh = {false};
    RealPlugin plugin = RealPlugin.identify(pluginPath, RealPlugin.memoDir(spec.cacheDir()), fresh);
    boolean managed = spec.layout() == null;
    Path layout = managed ? RuntimeCache.layoutDir(spec.cacheDir()) : spec.layout().toAbsolutePath();
    if (!managed) {
      requireLayoutFor(layout, plugin);
    }
    Path proxy = result(proxyTask);
    if (planKey != null) {
      plan = new FastStart.Writer(planKey, () -> proxy);
      notices = plan.watch(notices);
    }
    // The remote tier's runtime entries of this plugin, into the cache before the layout is brought up to date.
    RuntimeRemote remote = RuntimeRemote.before(spec, cache, plugin, layout, managed, notices);

    Path stats = null;
    Path spool = null;
    try {
      stats = StatsDirectories.create();
      if (spec.record()) {
        spool = newSpool(spec.cacheDir());
      }
      if (managed) {
        PrivateFiles.createDirectories(layout);
      }
    } catch (IOException e) {
      FileTrees.deleteTreeQuietly(stats);
      throw XlacException.environment("cannot prepare the run's directories: " + XlacException.reason(e));
    }
    try {
      ProxyEnvironment env;
      try {
        env = ProxyEnvironment.of(CommandRunner.userEnvironment(spec.env()),
            new ProxyEnvironment.Settings(proxy, plugin.path(), plugin.proxyValue(), layout, stats, spool));
      } catch (XlacException e) { // e.g. a proxy path JAX cannot take: nothing ran, nothing to keep
        FileTrees.deleteTreeQuietly(spool);
        throw e;
      }
      env.notes().forEach(notices);

      // The layout is brought up to date before the command starts (nothing to do while the stamp says it is
      // current): a compile that came before it was complete would miss an entry the cache holds.
      int[] materialized = null;
      try {
        materialized = prepareCache(cache, managed, layout, plugin, fresh[0], spec.cacheDir(), notices);
      } catch (RuntimeException e) { // never fail the training run for the layout
        notices.accept("cannot bring the runtime layout up to date (" + XlacException.reason(e)
            + "); serving it as it is");
      }
      long start = System.nanoTime();
      CommandRunner.Running running;
      try {
        running = CommandRunner.start(spec.command(), ServedCommand.withPreload(env.variables(), managed ? layout : null,
            spec.command()));
      } catch (CommandNotRunnableException e) {
        return RunResult.notRunnable(new NotRunnable(e.status(), e.getMessage()), plugin, layout);
      }
      CommandRunner.Outcome outcome = running.waitFor();
      Duration wall = Duration.ofNanos(System.nanoTime() - start);
      outcome.notes().forEach(notices);
      return finish(spec, cache, notices, plugin, managed, layout, stats, spool, materialized, outcome, wall, plan,
          remote);
    } finally {
      FileTrees.deleteTreeQuietly(stats);
    }
  }

  /** What {@code task} returned, or what it threw. */
  private static Path result(FutureTask<Path> task) throws InterruptedException {
    return Futures.join(task);
  }

  /** A {@code --layout DIR} must be a runtime layout that holds executables of this plugin. */
  static void requireLayoutFor(Path layout, RealPlugin plugin) {
    Optional<Set<String>> shas;
    try {
      if (!Files.isDirectory(layout)) {
        throw XlacException.environment("layout " + layout + " does not exist (write it with xlac cache"
            + " materialize --layout pjrt " + layout + ")");
      }
      shas = LayoutManifest.read(layout);
    } catch (IOException e) {
      throw XlacException.environment("cannot read layout " + layout + ": " + XlacException.reason(e));
    }
    if (shas.isEmpty()) {
      throw XlacException.environment("layout " + layout + " is not a runtime layout (it has no "
          + LayoutManifest.FILE + "; write it with xlac cache materialize --layout pjrt " + layout + ")");
    }
    if (!shas.get().isEmpty() && !shas.get().contains(plugin.sha256())) {
      throw XlacException.environment("layout " + layout + " was materialized for another plugin (sha256 "
          + String.join(", ", shas.get()) + "), not for " + plugin.path() + " (sha256 " + plugin.sha256()
          + "); materialize it again for this plugin");
    }
  }

  /** What {@link #prepareCache} returns when the layout was current already (nothing written). */
  private static final int[] CURRENT = {0, 0, 0};

  /**
   * Before the command starts: the layout brought up to date and the plugin's memo written, in one
   * short hold of the cache's lock; nothing at all when the stamp says the layout is current
   * ({@link RuntimeCache#layoutCurrent}). Null when the layout may not be current (the cache could
   * not be opened, or materializing had problems).
   */
  private static int[] prepareCache(CacheLocker cache, boolean managed, Path layout, RealPlugin plugin,
      boolean fresh, Path cacheDir, Consumer<String> notices) throws InterruptedException {
    if (!managed && !fresh || managed && !fresh && RuntimeCache.layoutCurrent(cacheDir, plugin.sha256())) {
      return CURRENT;
    }
    try (CacheStore.WriterLock lock = cache.lock()) {
      if (managed) {
        RuntimeCache.forget(cacheDir);
      }
      int[] problems = {0};
      int[] r = null;
      try (CacheStore store = lock.open()) {
        if (fresh) {
          plugin.remember(RealPlugin.memoDir(cacheDir));
        }
        if (!managed) {
          return null;
        }
        r = RuntimeCache.materialize(store, layout, Optional.of(plugin.sha256()), m -> {
          problems[0]++;
          notices.accept(m);
        });
      }
      if (problems[0] != 0) {
        return null;
      }
      // Still under the lock, the database closed: the stamp names the state the layout was just written from.
      RuntimeCache.markCurrent(cacheDir, plugin.sha256());
      return r;
    } catch (XlacException e) {
      notices.accept(e.getMessage() + "; serving the runtime layout as it is");
      return null;
    }
  }

  private static RunResult finish(RunSpec spec, CacheLocker cache, Consumer<String> notices, RealPlugin plugin,
      boolean managed, Path layout, Path stats, Path spool, int[] materialized, CommandRunner.Outcome outcome,
      Duration wall, FastStart.Writer plan, RuntimeRemote remote) throws InterruptedException {
    RunStatistics s = StatsDirectories.statistics(stats, notices);
    WhyMissed.Summary missed = WhyMissed.Summary.NONE; // against the cache before this run's recording goes in
    StatsDirectories.removeStale(stats); // those of runs killed before they could remove their own
    int damaged = managed ? RuntimeCache.deleteDamaged(layout, s) : 0;
    RequestIngest ingested = null;
    Path kept = null;
    boolean opened = false;
    boolean noRemote = false;
    Optional<dev.xlac.cache.RemoteSetting> remoteSetting = Optional.empty();
    // Whether the layout may stay current: it was current when the command started, and the run removed nothing from
    // it and adds nothing to the cache that it lacks.
    boolean keepsCurrent = materialized != null && damaged == 0 && s.damagedKeys().isEmpty();
    boolean current = keepsCurrent; // the stamp is left as it is when the cache is not opened
    if (s.hits() > 0 || spool != null) {
      try (CacheStore.WriterLock lock = cache.lock()) {
        // Under the lock, before the database opens: whether the stamp still holds, whatever ran meanwhile.
        boolean stampHeld = managed && keepsCurrent && RuntimeCache.layoutCurrent(spec.cacheDir(), plugin.sha256());
        CacheStore closedStore;
        try (CacheStore store = lock.open()) {
          closedStore = store;
          opened = true;
          remoteSetting = store.remoteSetting();
          noRemote = remoteSetting.isEmpty();
          missed = WhyMissed.forRun(store, s, stats);
          RuntimeCache.recordHits(store, s);
          if (managed) {
            writePreloadList(layout, spec.command(), s, notices);
          }
          if (spool != null) {
            ingested = PjrtRecordSpool.ingest(spool, store, notices);
            if (ingested.leftInSpool() == 0) {
              FileTrees.deleteTreeQuietly(spool);
            } else { // records the cache could not take (each named above): kept, never deleted
              kept = spool;
              notices.accept(ingested.leftInSpool() + " recorded compile" + (ingested.leftInSpool() == 1 ? "" : "s")
                  + " stay in " + spool + " (see the lines above; add them later with xlac cache add " + spool + ")");
            }
            ingested = ingested.plus(OrphanedSpools.adopt(spec.cacheDir(), store, notices));
          }
        }
        if (managed) {
          // The database closed, the lock still held: the stamp carried over to the state this run's writes made,
          // when it held before them and they added nothing the layout lacks.
          boolean added = ingested != null && ingested.added() > 0;
          // a prune while ingesting whose entries could not all leave the layout: it serves what the cache lacks
          current = stampHeld && kept == null && !added && !closedStore.runtimeLayoutHoldsRemoved();
          if (current) {
            RuntimeCache.markCurrent(spec.cacheDir(), plugin.sha256());
          } else {
            RuntimeCache.forget(spec.cacheDir());
          }
          RuntimeRemote.remember(spec.cacheDir(), remoteSetting); // the remote memo, for the new state too
        }
      } catch (XlacException e) {
        current = false;
        if (spool != null) {
          kept = spool;
          notices.accept(e.getMessage() + "; the recording stays in " + spool + " (add it with xlac cache add "
              + spool + ")");
        } else {
          notices.accept(e.getMessage() + "; this run's hits are not counted in the cache");
        }
      }
    }
    if (!opened && s.misses() > 0) {
      missed = WhyMissed.forRun(spec.cacheDir(), s, stats); // read-only: the stamp's database state is kept
    }
    var remoteStats = remote.after(spec, ingested, notices); // what the recording added, written through
    if (managed) {
      if (!current) { // (under the lock already when the cache was opened; forgetting is safe at any time)
        RuntimeCache.forget(spec.cacheDir());
      }
      if (plan != null && (opened || !current)) { // unopened and current: an earlier plan that holds stays
        plan.afterRun(spec, plugin, current && noRemote && spool == null && outcome.notes().isEmpty());
      }
    }
    return new RunResult(null, outcome.exitStatus(), s, plugin, layout, materialized == CURRENT ? null : materialized,
        ingested, kept, damaged, wall, remoteStats, missed);
  }

  /** Under the cache's lock, as the rest of the layout: the keys this run asked for, which the next one loads ahead. */
  private static void writePreloadList(Path layout, List<String> command, RunStatistics s, Consumer<String> notices) {
    try {
      PreloadList.write(ServedCommand.preloadList(layout, command), s.requested());
    } catch (IOException | RuntimeException e) {
      notices.accept("cannot write the list of executables to load ahead in " + layout + " ("
          + XlacException.reason(e) + "); the next run loads none ahead");
    }
  }

  private static Path newSpool(Path cacheDir) throws IOException {
    Path root = OrphanedSpools.spoolRoot(cacheDir);
    PrivateFiles.createDirectories(root);
    return Files.createTempDirectory(root, OrphanedSpools.prefix("run"));
  }
}
