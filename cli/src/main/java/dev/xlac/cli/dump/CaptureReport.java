package dev.xlac.cli.dump;

import dev.xlac.pipeline.explain.WhyNew;
import dev.xlac.pipeline.sources.CaptureResult;
import java.io.PrintWriter;

/** How {@code xlac dump} and the one-shot {@code parallel-compile -- COMMAND} print what a traced command did. */
public final class CaptureReport {
  private CaptureReport() {}

  /**
   * The command could not run: says why on stderr and returns its status (127, 126); else -1.
   */
  public static int notRunnable(CaptureResult r, PrintWriter err) {
    if (r.notRunnable() == null) {
      return -1;
    }
    err.println("xlac: " + r.notRunnable().message());
    err.flush();
    return r.notRunnable().status();
  }

  /**
   * The tracer's notes on stderr; the capture summary, what was recorded through the runtime proxy, graphs
   * already compiled and kept dumps on stdout.
   */
  public static void print(CaptureResult r, PrintWriter out, PrintWriter err) {
    r.notes().forEach(n -> err.println("xlac: " + n));
    out.println(r.summary());
    if (r.recording() != null && r.recording().line() != null) {
      out.println(r.recording().line());
    }
    r.alreadyCompiled().forEach((compiler, n) -> out.printf("%d already compiled for %s%n", n, compiler));
    if (r.keptDumps() != null) {
      out.println("dumps kept in " + r.keptDumps());
    }
    out.flush();
  }

  /**
   * Why the run's new graphs were new, in one line after the summary lines (stdout, like them); nothing
   * when no graph was new.
   */
  public static void whyNew(CaptureResult r, PrintWriter out) {
    whyNew(r.whyNew(), out);
  }

  /** The same line for any run's reasons ({@code parallel-compile PATH...} too). */
  public static void whyNew(WhyNew.Summary why, PrintWriter out) {
    String line = why.line();
    if (line != null) {
      out.println(line);
      out.flush();
    }
  }

  /** How the command ended, when there is something to say (on stderr). */
  public static void ending(CaptureResult r, PrintWriter err) {
    if (r.ending().line() != null) {
      err.println("xlac: " + r.ending().line());
      err.flush();
    }
  }
}
