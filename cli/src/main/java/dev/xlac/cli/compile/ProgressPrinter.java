package dev.xlac.cli.compile;

import dev.xlac.cli.InputReporter;
import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.schedule.CompileJob;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.pipeline.RunListener;
import dev.xlac.pipeline.sources.PathSource;
import java.io.PrintWriter;
import java.util.Locale;

/**
 * Progress on stderr: on a terminal one live line (a bar, done/total, failures, elapsed, ETA),
 * redrawn on every event and once a second; otherwise (CI, a pipe) one plain line per event.
 *
 * <p>In the one-shot mode graphs keep arriving while the command runs, so the total grows: until
 * {@link #captureEnded} every count is marked {@code capturing} and no ETA is given.
 */
final class ProgressPrinter implements RunListener {
  private final PrintWriter err;
  private final boolean live;
  private final long start = System.nanoTime();
  private RedrawTicker ticker;
  private boolean closed;
  private int total;
  private int done;
  private int failed;
  private boolean drawn;
  private boolean capturing;

  ProgressPrinter(PrintWriter err, boolean live) {
    this.err = err;
    this.live = live;
  }

  /** Whether stderr is a terminal that a live line can be drawn on. */
  static boolean terminal() {
    java.io.Console c = System.console();
    return c != null && c.isTerminal() && System.getenv("TERM") != null && !"dumb".equals(System.getenv("TERM"));
  }

  /** The PATHs' notes and unreadable files, one line each, before the plan. */
  @Override
  public synchronized void inputsRead(PathSource.Result inputs) {
    InputReporter.report(err, inputs);
  }

  /** An unreadable dump of the traced command, as {@code xlac dump} reports it. */
  @Override
  public synchronized void unreadable(String message) {
    err.println("xlac: " + message);
    err.flush();
  }

  /** What the run will do, before it starts: printed once, in both modes. */
  @Override
  public synchronized void planned(int graphs, int cached, int toCompile, int jobs) {
    err.printf(Locale.ROOT, "xlac: %d graph%s: %d cached, %d to compile with %d job%s%n", graphs,
        graphs == 1 ? "" : "s", cached, toCompile, jobs, jobs == 1 ? "" : "s");
    err.flush();
    if (live && toCompile > 0) {
      startTicker();
    }
  }

  /** The one-shot mode: graphs are compiled as {@code command} dumps them. Printed once. */
  @Override
  public synchronized void streaming(String command, int jobs) {
    capturing = true;
    err.printf(Locale.ROOT, "xlac: compiling each graph %s dumps as it arrives, with %d job%s%n", command, jobs,
        jobs == 1 ? "" : "s");
    err.flush();
    if (live) {
      startTicker();
    }
  }

  /** The command ended: no more graphs come; {@code line} says what was captured. */
  @Override
  public synchronized void captureEnded(String line) {
    capturing = false;
    line(line);
    if (live) {
      draw();
    }
  }

  /** How far the compiles got, e.g. {@code 5/8 compiled}; used in the capture-ended line. */
  @Override
  public synchronized String doneOfTotal() {
    return done + "/" + total;
  }

  private void startTicker() {
    if (ticker == null && !closed) {
      ticker = new RedrawTicker(this::redraw);
    }
  }

  @Override
  public synchronized void submitted(CompileJob job) {
    total++;
    if (live) {
      draw();
    }
  }

  @Override
  public synchronized void retrying(CompileJob job, CompileOutcome.Failure failure, String why) {
    line("retrying " + job.describe() + ": " + why);
  }

  @Override
  public synchronized void finished(GraphResult r) {
    done++;
    if (r.status().failed()) {
      failed++;
      line(String.format(Locale.ROOT, "[%d/%d%s] failed %s: %s", done, total, mark(), r.describe(), r.error()));
    } else if (!live) {
      line(String.format(Locale.ROOT, "[%d/%d%s] compiled %s in %.2f s", done, total, mark(), r.describe(),
          r.compileTime().toNanos() / 1e9));
    }
    if (live) {
      draw();
    }
  }

  private String mark() {
    return capturing ? ", capturing" : "";
  }

  /** A line that stays: on a terminal it replaces the live line, which is drawn again below it. */
  private void line(String text) {
    if (live && drawn) {
      err.print("\r\033[K");
    }
    err.println("xlac: " + text);
    err.flush();
  }

  private synchronized void redraw() {
    draw();
  }

  private void draw() {
    if (closed) {
      return; // a tick that waited for the lock while close() ran, or a late job from another thread
    }
    err.print(ProgressLine.of(done, total, failed, capturing, (System.nanoTime() - start) / 1e9));
    err.flush();
    drawn = true;
  }

  /** Stops the clock and ends the live line. Safe twice. */
  @Override
  public synchronized void close() {
    closed = true; // a job submitted by another thread from now on starts no clock
    if (ticker != null) {
      ticker.stop(); // does not wait for a redraw, which needs this lock
    }
    if (live && drawn) {
      err.println();
      err.flush();
      drawn = false;
    }
  }
}
