package dev.xlac.pipeline;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.RequestInfo;
import dev.xlac.cache.TieredCache;
import dev.xlac.compiler.CompilerDriver;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.pipeline.explain.WhyNew;
import dev.xlac.pipeline.recording.RecordingResult;
import dev.xlac.pipeline.sources.CacheIntake;
import dev.xlac.pipeline.sources.CaptureResult;
import dev.xlac.pipeline.sources.CommandEnding;
import dev.xlac.pipeline.sources.CommandSource;
import dev.xlac.pipeline.sources.PathSource;
import dev.xlac.pipeline.sources.TraceSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * {@code parallel-compile}, in its three forms: the graphs in PATHs ({@link #paths}), every graph in
 * the cache ({@link #cache}), and the graphs a running command dumps ({@link #command}); the one
 * orchestration of a compile run, whatever its executor. Its steps: collect the programs, settle each
 * against the cache ({@link CompileFeed}), hand the rest to the setup's {@link CompileExecutor} (local
 * workers, or a Slurm job array), then explain what is new ({@link WhyNew}) and report ({@link RunReport}).
 * Each result is stored the moment it is known ({@link CacheResults}).
 *
 * <p>The resource order is the same in all three: the drivers first (checked, and with PATHs or a
 * command the first worker already starting, so its start-up overlaps the rest), then the cache,
 * its pins against the max-size for the run's length, and the compiler's identity on its own
 * thread ({@link IdentityProbe}). A run where everything is cached starts no worker.
 */
public final class CompileRuns {
  private CompileRuns() {}

  /** Adds the modules in {@code paths} to the cache and compiles those that need it. */
  public static CompileResult paths(CompileSetup setup, List<Path> paths) throws InterruptedException {
    return fixedList(setup, paths, null);
  }

  /**
   * The cache's own work: compiles every graph in the cache that has no artifact (or failure) for this compiler,
   * and, with a PJRT plugin, every recorded request that has no runtime entry for this plugin
   * ({@link RecordedRequests}), so that {@code xlac run} with this plugin serves them all.
   */
  public static CompileResult cache(CompileSetup setup) throws InterruptedException {
    return fixedList(setup, List.of(), null);
  }

  /**
   * Compiles {@code graphs}, already in the cache, submitting them in the order given, then the recorded requests
   * {@code carried} (each with its program, keyed for the submitter's plugin): a Slurm shard's task, longest first
   * ({@link dev.xlac.pipeline.shard.ShardTask}, which is why this is public). One keyed for a plugin identity other
   * than this compiler's (another plugin file or other XLA_FLAGS on this node) is not compiled: its entry would be
   * keyed for a plugin that did not build it.
   */
  public static CompileResult inOrder(CompileSetup setup, SequencedMap<GraphFingerprint, String> graphs,
      List<CompileWork.Request> carried) throws InterruptedException {
    return fixedList(setup, List.of(), graphs, carried);
  }

  private static CompileResult fixedList(CompileSetup setup, List<Path> paths,
      SequencedMap<GraphFingerprint, String> ordered) throws InterruptedException {
    return fixedList(setup, paths, ordered, List.of());
  }

  private static CompileResult fixedList(CompileSetup setup, List<Path> paths,
      SequencedMap<GraphFingerprint, String> ordered, List<CompileWork.Request> carried)
      throws InterruptedException {
    CompileExecutor executor = setup.executor();
    executor.checkReady();
    RunListener listener = progressFor(executor, setup.listener());
    // With PATHs, compiles are almost always needed: the first worker starts now, while the cache
    // opens and the PATHs are read. Without (or compiling elsewhere), a run where everything is cached starts none.
    try (PreparedDrivers early = paths.isEmpty() || !executor.compilesHere() ? PreparedDrivers.none(setup.drivers())
            : PreparedDrivers.start(setup.drivers());
        CacheStore store = setup.cache().open(); var _ = store.pinForRun();
        TieredCache tiers = TieredCache.open(store, setup.remote(), listener::notice)) {
      // A Slurm shard compiles its graphs only; recorded requests are the cache's own work.
      List<RequestInfo> recorded = paths.isEmpty() && ordered == null ? store.requests() : List.of();
      RunDrivers prepared = withRequests(early.open(), recorded, carried.isEmpty(), store, executor,
          executor.compilesHere() ? listener::notice : line -> { });
      DriverFactory drivers = prepared.factory(); // closed by the feed once started, else by the probe
      try (CompileFeed feed = new CompileFeed(store, setup.settings(), setup.retryFailed(), listener,
          setup.memory(), tiers, executor)) {
        long start = System.nanoTime();
        // Without a probe record, learning the identity loads the plugin in the first worker (and
        // hashes it): that overlaps reading and storing the PATHs.
        IdentityProbe probe = IdentityProbe.start(() -> drivers, feed, null);
        try {
          ExitCode inputs = ExitCode.OK;
          SequencedMap<GraphFingerprint, String> graphs = ordered != null ? ordered : new TreeMap<>();
          SequencedMap<GraphFingerprint, String> added = new java.util.LinkedHashMap<>();
          if (!paths.isEmpty()) {
            PathSource.Result read = PathSource.ingest(store, paths);
            listener.inputsRead(read);
            inputs = read.exitCode();
            read.graphs().forEach(graphs::putIfAbsent);
            added.putAll(read.newGraphs());
          } else if (ordered == null) {
            for (GraphInfo g : store.graphs()) {
              graphs.put(g.fingerprint(), g.moduleName());
            }
          }
          List<CompileWork> work = new ArrayList<>();
          graphs.forEach((fp, module) -> work.add(new CompileWork.Graph(fp, module)));
          List<GraphResult> fromRecord = new ArrayList<>();
          if (prepared.planned() != null) {
            // Planned with a remembered text, and all cached when checked: settled here, never compiled (a text from
            // a record may be stale, so nothing is compiled or stored under it).
            for (CompileWork w : prepared.planned()) {
              CompileWork.Request r = (CompileWork.Request) w;
              fromRecord.add(store.requestInfo(r.key()).isPresent() ? GraphResult.cached(r.key(), r.name())
                  : new GraphResult(r.key(), r.name(), GraphResult.Status.NOT_RUN, Duration.ZERO, 0, null,
                      "not compiled: its runtime entry was removed while this run started (the cache's size limit);"
                      + " run again"));
            }
          } else if (prepared.identityText() != null) {
            // the CPU notice is about this machine's workers; an executor elsewhere compiles on its own nodes
            work.addAll(RecordedRequests.plan(store, prepared.toPlan() != null ? prepared.toPlan() : recorded,
                prepared.identityText(), executor.compilesHere() ? listener::notice : line -> {}));
          }
          List<GraphResult> foreign = new ArrayList<>();
          for (CompileWork.Request r : carried) {
            if (r.identityText().equals(prepared.identityText())) {
              work.add(r);
            } else {
              foreign.add(new GraphResult(r.key(), r.name(), GraphResult.Status.NOT_RUN, java.time.Duration.ZERO, 0,
                  null, "not compiled: " + (prepared.identityText() == null ? "this compiler is not a PJRT plugin"
                  : "it is keyed for a plugin identity other than this node's (another plugin file, another CPU,"
                  + " or other XLA_FLAGS or LIBTPU_INIT_ARGS, than the submitter's)")));
            }
          }
          List<GraphResult> results;
          // Ctrl-C: stop the compiles, keep what is stored, and let this thread close the cache.
          try (ShutdownCancel interrupt = new ShutdownCancel()) {
            interrupt.cancels(feed::cancel);
            results = new ArrayList<>(feed.offerAll(work));
          }
          results.addAll(foreign);
          results.addAll(fromRecord);
          // uploads drained
          RunReport report = finishRun(results, start, listener, feed.jobs()).withRemote(tiers.finish());
          WhyNew.Summary whyNew = WhyNew.explain(store, added); // after the report's wall time, as one-shot
          return new CompileResult(report.withReasons(whyNew), inputs, whyNew);
        } finally {
          probe.join(); // so that no worker starts after the factory was closed
        }
      }
    } finally {
      listener.close();
    }
  }

  /**
   * A run's driver factory, the plugin identity text its recorded requests are keyed with (null: none), and, when
   * a remembered text found every recorded request compiled already, their plan (else null); {@code toPlan}: the
   * recorded requests to plan with the text, when a look with a remembered text left some out (else null: all).
   */
  private record RunDrivers(DriverFactory factory, String identityText, List<CompileWork> planned,
      List<RequestInfo> toPlan) {
    RunDrivers(DriverFactory factory, String identityText) {
      this(factory, identityText, null, null);
    }
  }

  /**
   * With recorded requests to consider and a PJRT compiler, the factory whose first driver is open now: the
   * plugin identity text their keys for this plugin need comes from it (the driver then compiles the first job),
   * and is remembered. Before that, when the factory remembers the text for this plugin on this machine
   * ({@link DriverFactory#rememberedIdentityText}) and no carried request needs the exact text, the requests are
   * planned with it: if every one is compiled in the cache, no driver starts (a run with nothing to compile then
   * loads no plugin); else the remembered text is not used, as it may be stale, and a driver is asked. Another compiler
   * (neuronx-cc) compiles graphs only. On a failure the factory is closed.
   */
  private static RunDrivers withRequests(DriverFactory drivers, List<RequestInfo> recorded, boolean noneCarried,
      CacheStore store, CompileExecutor executor, java.util.function.Consumer<String> notice) {
    if (recorded.isEmpty() && noneCarried) {
      return new RunDrivers(drivers, null);
    }
    CompilerDriver first;
    List<RequestInfo> readable = null; // null: the driver's text plans every recorded request
    try {
      if (!drivers.identity().driver().equals("pjrt")) { // known without a worker when a probe recorded it
        return new RunDrivers(drivers, null);
      }
      if (noneCarried) {
        RecordCheck check = allCompiled(drivers, recorded, store, executor, notice);
        if (check.settled() != null) {
          return check.settled();
        }
        readable = check.readable();
      }
      first = drivers.open();
    } catch (RuntimeException | Error e) {
      drivers.close();
      throw e;
    }
    String text;
    try { // for a CPU plugin this loads the runtime library (the host CPU lines), which can fail
      text = first.pluginFacts().map(f -> RecordedRequests.identityText(f, executor.compileEnvironment()))
          .orElse(null);
      if (text != null) {
        drivers.rememberIdentityText(textContext(executor), text);
      }
    } catch (RuntimeException | Error e) {
      try (drivers; first) {
        throw e;
      }
    }
    if (!executor.compilesHere()) { // no compile here for the driver to do
      first.close();
      return new RunDrivers(drivers, text, null, readable);
    }
    return new RunDrivers(RecordedRequests.withFirst(drivers, first, store.directory()), text, null, readable);
  }

  /**
   * What {@link #allCompiled} found: the run's drivers with every request settled from a record, or (settled null)
   * the recorded requests it could read, for the driver's text to plan without reading the others again (null: it
   * read none, as there was no usable record).
   */
  private record RecordCheck(RunDrivers settled, List<RequestInfo> readable) {}

  /**
   * What, besides the plugin and the machine, the identity text is made from
   * ({@link RecordedRequests#identityText}): the compile environment's {@code XLA_FLAGS} and {@code LIBTPU_INIT_ARGS}.
   */
  private static String textContext(CompileExecutor executor) {
    return identityTextContext(executor.compileEnvironment());
  }

  /**
   * The context a PJRT factory remembers the plugin identity text under ({@code DriverFactory.rememberIdentityText})
   * for a compile environment {@code env}; public for the launcher's class-cache training, which records one.
   */
  public static String identityTextContext(Map<String, String> env) {
    return "XLA_FLAGS=" + env.get("XLA_FLAGS") + "\0LIBTPU_INIT_ARGS=" + env.get("LIBTPU_INIT_ARGS");
  }

  /**
   * The run's drivers with the requests planned with the factory's remembered identity text, when there is one and
   * every request so planned has its runtime entry in the local cache (what {@link CacheResults} counts as cached);
   * the plan's notices are given only then. Otherwise nothing settled, and the caller asks a driver.
   */
  private static RecordCheck allCompiled(DriverFactory drivers, List<RequestInfo> recorded, CacheStore store,
      CompileExecutor executor, java.util.function.Consumer<String> notice) {
    Optional<String> remembered = drivers.rememberedIdentityText(textContext(executor));
    // A text of another plugin build than the one the identity names (a change the record's key missed) is no use.
    String sha = drivers.identity().options().get("plugin.sha256");
    if (remembered.isEmpty() || sha == null
        || !dev.xlac.runtime.PluginIdentityText.field(remembered.get(), "plugin_sha256").equals(Optional.of(sha))) {
      return new RecordCheck(null, null);
    }
    String text = remembered.get();
    List<String> notices = new ArrayList<>();
    List<RequestInfo> read = new ArrayList<>();
    List<CompileWork> planned = RecordedRequests.plan(store, recorded, text, notices::add, read::add);
    boolean cached = planned.stream().allMatch(w -> w instanceof CompileWork.Request r
        && store.requestInfo(r.key()).isPresent());
    if (!cached) {
      // The driver's text plans the requests read here; one found damaged is not read (and reported) again.
      return new RecordCheck(null, read);
    }
    notices.forEach(notice);
    return new RecordCheck(new RunDrivers(drivers, text, planned, null), null);
  }

  /**
   * The one-shot run: the command runs traced as by {@code xlac dump}, each new graph goes into the
   * cache as it is captured and on to the feed, so compiles run while the command still runs.
   *
   * <p>The drivers are checked before the command starts (bad options are 2, a missing plugin or
   * compiler 3). The compiler's identity is probed while the command starts; if that fails,
   * compiling cannot work, so the command is stopped (the tracer sends it SIGTERM) and the failure
   * is thrown; what it dumped is in the cache. After a signal was forwarded to the command, the
   * compiles still running are stopped too; what finished is stored.
   */
  public static OneShotResult command(CompileSetup setup, TraceSpec trace) throws InterruptedException {
    CompileExecutor executor = setup.executor();
    executor.checkReady();
    RunListener listener = progressFor(executor, setup.listener());
    try (PreparedDrivers early = executor.compilesHere() ? PreparedDrivers.start(setup.drivers())
            : PreparedDrivers.none(setup.drivers());
        CommandSource source = CommandSource.create(trace);
        CacheStore store = setup.cache().open(); var _ = store.pinForRun();
        TieredCache tiers = TieredCache.open(store, setup.remote(), listener::notice);
        ShutdownCancel interrupt = new ShutdownCancel();
        CompileFeed feed = new CompileFeed(store, setup.settings(), setup.retryFailed(), listener, setup.memory(),
            tiers, executor)) {
      long start = System.nanoTime();
      String command = Path.of(trace.command().getFirst()).getFileName().toString();
      interrupt.cancels(feed::cancel);
      CacheIntake intake = new CacheIntake(store, listener::unreadable, m -> feed.offer(m.fingerprint(),
          m.moduleName()));
      IdentityProbe probe = IdentityProbe.start(executor.compilesHere() ? early::open : knownIdentity(early), feed,
          Thread.currentThread());
      listener.streaming(command, setup.settings().jobs());
      CommandSource.Traced traced;
      try {
        traced = source.run(intake);
      } catch (InterruptedException e) {
        XlacException why = probe.awaitEnd();
        if (why == null) {
          throw e;
        }
        throw stopped(why, command);
      } finally {
        probe.awaitEnd(); // no worker starts after the factory is closed
      }
      XlacException why = probe.awaitEnd();
      if (traced.notRunnable() != null) { // nothing ran, whatever the compiler did: 127 or 126
        return new OneShotResult(CaptureResult.notRunnable(traced.notRunnable()), null);
      }
      if (why != null) {
        throw stopped(why, command);
      }
      listener.captureEnded(String.format("%s ended: %d unique graph%s, %s compiled so far", command,
          feed.offered(), feed.offered() == 1 ? "" : "s", listener.doneOfTotal()));
      if (traced.outcome().signalForwarded() != null) {
        feed.cancel();
      }
      // uploads drained
      RunReport report = finishRun(feed.finish(), start, listener, feed.jobs()).withRemote(tiers.finish());
      WhyNew.Summary whyNew = WhyNew.explain(store, intake.newGraphs()); // after the report's wall time
      report = report.withReasons(whyNew);
      CommandEnding ending = CommandEnding.of(trace.command(), traced.outcome(), intake, trace.ignoreScriptErrors());
      RecordingResult recorded = source.ingestRecording(store, listener::unreadable);
      CaptureResult capture = new CaptureResult(null, traced.outcome().notes(), intake.summary(), Map.of(),
          source.keptDumps(), ending, intake.unreadable(), 0, whyNew, recorded);
      return new OneShotResult(capture, report);
    } finally {
      listener.close();
    }
  }

  private static XlacException stopped(XlacException why, String command) {
    return new XlacException(why.exitCode(), why.getMessage() + "; xlac stopped " + command
        + " (the graphs it dumped so far are in the cache)", why);
  }

  /**
   * Without local workers to start, the compiler's identity (the artifacts' key) is learnt before the command
   * starts, so that a missing plugin is 3 before it runs; the probe then only hands the factory to the feed.
   */
  private static Supplier<DriverFactory> knownIdentity(PreparedDrivers early) {
    DriverFactory factory = early.open();
    try {
      factory.identity();
    } catch (RuntimeException | Error e) {
      factory.close();
      throw e;
    }
    return () -> factory;
  }

  /**
   * The run's listener, for its executor: one that compiles elsewhere says its own progress, so the counts of
   * local compiles (the plan's line, the live bar) are left out; inputs, notices and unreadable files stay.
   */
  private static RunListener progressFor(CompileExecutor executor, RunListener listener) {
    if (executor.compilesHere()) {
      return listener;
    }
    return new RunListener() {
      @Override
      public void inputsRead(PathSource.Result inputs) {
        listener.inputsRead(inputs);
      }

      @Override
      public void unreadable(String message) {
        listener.unreadable(message);
      }

      @Override
      public void notice(String line) {
        listener.notice(line);
      }

      @Override
      public void close() {
        listener.close();
      }
    };
  }

  /** The one end of a run: the listener is closed, the results sorted by module, then fingerprint. */
  private static RunReport finishRun(List<GraphResult> results, long start, RunListener listener, int jobs) {
    listener.close();
    List<GraphResult> sorted = new ArrayList<>(results);
    sorted.sort(Comparator.comparing(GraphResult::moduleName).thenComparing(g -> g.fingerprint().value()));
    return new RunReport(sorted, Duration.ofNanos(System.nanoTime() - start), jobs);
  }
}
