package dev.xlac.pipeline;

import static dev.xlac.core.Durations.round;
import static dev.xlac.core.Durations.seconds;

import dev.xlac.cache.RemoteSummary;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.core.ExitCode;
import dev.xlac.core.FailureKind;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.pipeline.explain.WhyNew;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The outcome of a whole run: every graph considered (compiled, cached or failed), the wall time
 * and the job count; and its renderings: summary lines, the JSON report and JUnit XML.
 *
 * @param reasons why each graph the run added to the cache was new (dump-path and one-shot runs; {@link WhyNew}), by fingerprint
 */
public record RunReport(List<GraphResult> graphs, Duration wall, int jobs, Map<GraphFingerprint, WhyNew.Reason> reasons,
    RemoteSummary remote) {

  public RunReport {
    graphs = List.copyOf(graphs);
    reasons = Map.copyOf(reasons);
  }

  public RunReport(List<GraphResult> graphs, Duration wall, int jobs) {
    this(graphs, wall, jobs, Map.of());
  }

  public RunReport(List<GraphResult> graphs, Duration wall, int jobs, Map<GraphFingerprint, WhyNew.Reason> reasons) {
    this(graphs, wall, jobs, reasons, null);
  }

  /** This report with the reasons of a run's new graphs. */
  public RunReport withReasons(WhyNew.Summary why) {
    return new RunReport(graphs, wall, jobs, why.byGraph(), remote);
  }

  /** This report with what the run did with the remote tier (null: it had none). */
  public RunReport withRemote(RemoteSummary stats) {
    return new RunReport(graphs, wall, jobs, reasons, stats);
  }

  public int total() {
    return graphs.size();
  }

  public long compiled() {
    return count(GraphResult.Status.COMPILED);
  }

  public long cached() {
    return count(GraphResult.Status.CACHED);
  }

  public long failed() {
    return graphs.stream().filter(g -> g.status().failed()).count();
  }

  /** Failed graphs that were skipped because an earlier run's compile of them failed. */
  public long previouslyFailed() {
    return count(GraphResult.Status.PREVIOUSLY_FAILED);
  }

  private long count(GraphResult.Status s) {
    return graphs.stream().filter(g -> g.status() == s).count();
  }

  /** The compilers' wall time, summed over graphs and attempts. */
  public Duration compileTime() {
    return graphs.stream().map(GraphResult::compileTime).reduce(Duration.ZERO, Duration::plus);
  }

  /** Sum of compile times over wall time: how many compiles ran at once on average. */
  public double speedup() {
    return wall.isZero() ? 0 : seconds(compileTime()) / seconds(wall);
  }

  /**
   * 0 when every graph compiled or was cached; 3 when the compiler could not run; else 1 when some
   * graph failed (in this run or, not retried, in an earlier one).
   */
  public ExitCode exitCode() {
    if (graphs.stream().anyMatch(g -> g.failureKind() == FailureKind.ENVIRONMENT)) {
      return ExitCode.ENVIRONMENT;
    }
    return failed() > 0 ? ExitCode.WORK_FAILED : ExitCode.OK;
  }

  /**
   * The summary for people: counts, one line per failure saying where its log is, and the times.
   * A failure whose log is in the cache names {@code xlac cache log FINGERPRINT}.
   */
  public List<String> summaryLines() {
    List<String> lines = new ArrayList<>();
    long requests = graphs.stream().filter(g -> CacheResults.isRequest(g.fingerprint())).count();
    long plain = total() - requests;
    String what = requests == 0 ? count(plain, "graph") : plain == 0 ? count(requests, "recorded request")
        : count(plain, "graph") + " and " + count(requests, "recorded request");
    StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "%s: %d compiled, %d cached, %d failed",
        what, compiled(), cached(), failed()));
    if (previouslyFailed() > 0) {
      head.append(String.format(Locale.ROOT, " (%d failed in an earlier run and %s skipped; --retry-failed compiles"
          + " them again)", previouslyFailed(), previouslyFailed() == 1 ? "was" : "were"));
    }
    lines.add(head.toString());
    for (GraphResult g : graphs) {
      if (g.status().failed()) {
        boolean logged = (g.status() == GraphResult.Status.FAILED || g.status() == GraphResult.Status.PREVIOUSLY_FAILED)
            && !CacheResults.isRequest(g.fingerprint()); // a request's line names its log file itself
        lines.add("  failed: " + g.describe() + ": " + withoutName(g) + (logged
            ? "; log: xlac cache log " + g.fingerprint().value() : ""));
      }
    }
    if (compileTime().isZero()) {
      lines.add(String.format(Locale.ROOT, "wall %.2f s; nothing compiled", seconds(wall)));
    } else {
      lines.add(String.format(Locale.ROOT, "wall %.2f s, compile time %.2f s, effective parallel speedup %.2fx"
          + " (%d job%s)", seconds(wall), seconds(compileTime()), speedup(), jobs, jobs == 1 ? "" : "s"));
    }
    if (remote != null) {
      lines.add(remote.runLine());
    }
    return lines;
  }

  private static String count(long n, String noun) {
    return n + " " + noun + (n == 1 ? "" : "s");
  }

  /** The error without the graph's own name in front (the summary line names it already). */
  private static String withoutName(GraphResult g) {
    String prefix = g.describe() + ": ";
    return g.error().startsWith(prefix) ? g.error().substring(prefix.length()) : g.error();
  }

  /**
   * The JSON report: {@code total}, {@code compiled}, {@code cached}, {@code failed},
   * {@code wall_seconds}, {@code compile_seconds}, {@code jobs} and {@code graphs}, each graph with
   * {@code fingerprint}, {@code module}, {@code status} ({@code compiled|cached|failed}),
   * {@code compile_seconds}, {@code error} (null unless failed), {@code failure_kind} (null, a
   * driver's kind such as {@code compile-error} or {@code crash}, {@code earlier-failure} or
   * {@code not-run}), {@code attempts}, {@code reason} (null unless the run added the graph to the
   * cache, else why it was new: {@link WhyNew.Reason#text()}, e.g. {@code batch size (32 -> 48)} or
   * {@code no relative}) and {@code relative} (the nearest cached graph's fingerprint, or null).
   */
  public Map<String, Object> toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("total", total());
    m.put("compiled", compiled());
    m.put("cached", cached());
    m.put("failed", failed());
    m.put("wall_seconds", round(seconds(wall)));
    m.put("compile_seconds", round(seconds(compileTime())));
    m.put("jobs", jobs);
    List<Map<String, Object>> rows = new ArrayList<>();
    for (GraphResult g : graphs) {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("fingerprint", g.fingerprint().value());
      r.put("module", g.moduleName());
      r.put("status", g.status().reportName());
      r.put("compile_seconds", round(seconds(g.compileTime())));
      r.put("error", g.error());
      r.put("failure_kind", failureKind(g));
      r.put("attempts", g.attempts());
      WhyNew.Reason why = reasons.get(g.fingerprint());
      r.put("reason", why == null ? null : why.text());
      r.put("relative", why == null || why.relative() == null ? null : why.relative().value());
      rows.add(r);
    }
    m.put("graphs", rows);
    if (remote != null) {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("url", remote.remote());
      r.put("read_through", remote.downloaded());
      r.put("read_through_bytes", remote.downloadedBytes());
      r.put("not_there", remote.misses());
      r.put("rejected", remote.rejected());
      r.put("uploaded", remote.uploaded());
      r.put("uploaded_bytes", remote.uploadedBytes());
      r.put("already_there", remote.alreadyThere());
      r.put("failed", remote.failed());
      r.put("skipped", remote.skipped());
      r.put("unavailable", remote.unavailable());
      m.put("remote", r);
    }
    return m;
  }

  private static String failureKind(GraphResult g) {
    return switch (g.status()) {
      case COMPILED, CACHED -> null;
      case PREVIOUSLY_FAILED -> "earlier-failure";
      case FAILED -> GraphResult.kindName(g.failureKind());
      case NOT_RUN -> g.failureKind() == FailureKind.ENVIRONMENT ? "environment" : "not-run";
    };
  }

  /**
   * JUnit XML: one {@code testsuite} named {@code xlac parallel-compile}, one {@code testcase} per
   * graph (name: module and short fingerprint; classname: the full fingerprint). Every failed graph
   * is a {@code <failure>} with its error as the message and its kind as the type, including one
   * that failed in an earlier run: CI should show red when the exit code is 1.
   */
  public String toJunitXml() {
    StringBuilder x = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.append(String.format(Locale.ROOT, "<testsuite name=\"xlac parallel-compile\" tests=\"%d\" failures=\"%d\""
        + " errors=\"0\" skipped=\"0\" time=\"%.3f\">%n", total(), failed(), seconds(wall)));
    for (GraphResult g : graphs) {
      x.append("  <testcase name=\"").append(xml(g.describe())).append("\" classname=\"")
          .append(xml(g.fingerprint().value())).append("\" time=\"")
          .append(String.format(Locale.ROOT, "%.3f", seconds(g.compileTime()))).append('"');
      if (!g.status().failed()) {
        x.append("/>\n");
        continue;
      }
      x.append(">\n    <failure message=\"").append(xml(g.error())).append("\" type=\"")
          .append(xml(failureKind(g))).append("\">").append(xml(g.error())).append("</failure>\n  </testcase>\n");
    }
    return x.append("</testsuite>\n").toString();
  }

  /** Escapes text for XML 1.0 content and attributes, dropping characters XML cannot hold. */
  static String xml(String s) {
    StringBuilder b = new StringBuilder(s.length() + 16);
    s.codePoints().forEach(c -> {
      switch (c) {
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '&' -> b.append("&amp;");
        case '"' -> b.append("&quot;");
        case '\'' -> b.append("&apos;");
        case '\n' -> b.append("&#10;");
        case '\r' -> b.append("&#13;");
        case '\t' -> b.append("&#9;");
        default -> {
          boolean legal = (c >= 0x20 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
          if (legal) {
            b.appendCodePoint(c);
          } else {
            b.append('?');
          }
        }
      }
    });
    return b.toString();
  }
}
