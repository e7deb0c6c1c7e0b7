package dev.xlac.cli.compile;

import dev.xlac.cache.CacheStore;
import dev.xlac.capture.CaptureListener;
import dev.xlac.capture.CapturedModule;
import dev.xlac.capture.CommandTracer;
import dev.xlac.cli.dump.DumpIngest;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.RunReport;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.HloReadException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The one-shot {@code parallel-compile -- COMMAND}: the command runs traced as by {@code xlac dump},
 * each new graph goes into the cache as it is captured and on to a {@link CompileFeed}, so compiles
 * run while the command still runs.
 *
 * <p>The compiler's identity is probed on its own thread while the command starts (for PJRT
 * without a remembered probe that is a worker JVM and hashing the plugin; its first worker was
 * already started by {@link PrestartedDrivers}, which also ran the cheap checks). If the probe fails, compiling cannot work, so the
 * command is stopped (the tracer sends it SIGTERM) and the failure is thrown; what it dumped is
 * in the cache. After a signal was forwarded to the command, the compiles still running are
 * stopped too; what finished is stored.
 */
final class OneShotRun {
  /** @param report every graph the command dumped (wall time: from the command's start) */
  record Outcome(RunReport report, DumpIngest ingest, CommandTracer.Outcome trace) {}

  private final CacheStore store;
  private final PrestartedDrivers drivers;
  private final SchedulerSettings settings;
  private final boolean retryFailed;
  private final ProgressPrinter progress;
  private final PrintWriter err;

  OneShotRun(CacheStore store, PrestartedDrivers drivers, SchedulerSettings settings, boolean retryFailed,
      ProgressPrinter progress, PrintWriter err) {
    this.store = store;
    this.drivers = drivers;
    this.settings = settings;
    this.retryFailed = retryFailed;
    this.progress = progress;
    this.err = err;
  }

  Outcome run(CommandTracer.Request request) throws InterruptedException {
    long start = System.nanoTime();
    String command = java.nio.file.Path.of(request.command().getFirst()).getFileName().toString();
    AtomicReference<XlacException> unusable = new AtomicReference<>();
    try (ShutdownCancel interrupt = new ShutdownCancel();
        CompileFeed feed = new CompileFeed(store, settings, retryFailed, progress)) {
      interrupt.cancels(feed::cancel);
      DumpIngest ingest = new DumpIngest(store, err, m -> feed.offer(m.fingerprint(), m.moduleName()));
      Gate gate = new Gate(ingest);
      Thread caller = Thread.currentThread();
      Thread probe = Thread.ofPlatform().name("xlac-compiler-probe").start(() -> {
        try {
          feed.start(probed());
        } catch (RuntimeException e) {
          unusable.set(e instanceof XlacException x ? x
              : new XlacException(ExitCode.INTERNAL, "cannot start the compiler: " + XlacException.reason(e), e));
          caller.interrupt(); // stops the command: its graphs could not be compiled
        }
      });
      progress.streaming(command, settings.jobs());
      CommandTracer.Outcome traced;
      try {
        traced = CommandTracer.run(request, gate);
        probe.join();
      } catch (InterruptedException e) {
        if (unusable.get() == null) {
          throw e;
        }
        XlacException why = unusable.get();
        throw new XlacException(why.exitCode(), why.getMessage() + "; xlac stopped " + command
            + " (the graphs it dumped so far are in the cache)", why);
      } finally {
        gate.close(); // the tracer's watcher may outlive an interrupted run
        probe.join();
      }
      progress.captureEnded(String.format("%s ended: %d unique graph%s, %s compiled so far", command,
          feed.offered(), feed.offered() == 1 ? "" : "s", progress.doneOfTotal()));
      if (traced.signalForwarded() != null) {
        feed.cancel();
      }
      List<GraphResult> results = new ArrayList<>(feed.finish());
      progress.close();
      results.sort(Comparator.comparing(GraphResult::moduleName).thenComparing(GraphResult::fingerprint));
      RunReport report = new RunReport(results, Duration.ofNanos(System.nanoTime() - start), settings.jobs());
      return new Outcome(report, ingest, traced);
    }
  }

  /** The driver factory with its identity known (this may start the compiler once). */
  private DriverFactory probed() {
    DriverFactory f = drivers.open();
    try {
      f.identity();
      return f;
    } catch (RuntimeException e) {
      f.close();
      throw e;
    }
  }

  /** Passes captures on until closed; a capture in progress finishes before {@link #close()} returns. */
  private static final class Gate implements CaptureListener {
    private final CaptureListener next;
    private boolean closed;

    Gate(CaptureListener next) {
      this.next = next;
    }

    @Override
    public synchronized void captured(CapturedModule module) {
      if (!closed) {
        next.captured(module);
      }
    }

    @Override
    public synchronized void unreadable(HloReadException error) {
      if (!closed) {
        next.unreadable(error);
      }
    }

    synchronized void close() {
      closed = true;
    }
  }
}
