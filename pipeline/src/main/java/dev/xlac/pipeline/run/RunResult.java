package dev.xlac.pipeline.run;

import static dev.xlac.core.Durations.round;
import static dev.xlac.core.Durations.seconds;

import dev.xlac.cache.RequestIngest;
import dev.xlac.cache.RemoteSummary;
import dev.xlac.capture.NotRunnable;
import dev.xlac.pipeline.explain.WhyMissed;
import dev.xlac.pipeline.recording.RealPlugin;
import dev.xlac.runtime.RunStatistics;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code xlac run} did: the command's exit status, what the proxy counted, and what went into
 * the cache.
 *
 * @param notRunnable why the command could not run (127/126), or null
 * @param exitStatus xlac run's exit status: the command's (128 + N for signal N)
 * @param stats the proxy's statistics, summed over the command's processes
 * @param plugin the real plugin
 * @param layout the layout served from
 * @param materialized layout entries written, kept and removed before the run; null when the cache
 *     could not be opened or {@code --layout} was given
 * @param ingested what a recording run put into the cache; null without {@code --record}
 * @param keptSpool a recording that could not be put into the cache (for {@code xlac cache add}), or null
 * @param damagedRemoved layout entries the proxy could not serve, deleted so the next run rewrites them
 * @param wall the command's wall time
 * @param remote what the run did with the cache's remote tier ({@link RuntimeRemote}), or null when it used none
 * @param missReasons why each miss was not served ({@link WhyMissed})
 */
public record RunResult(NotRunnable notRunnable, int exitStatus, RunStatistics stats,
    RealPlugin plugin, Path layout, int[] materialized, RequestIngest ingested, Path keptSpool, int damagedRemoved,
    Duration wall, RemoteSummary remote, WhyMissed.Summary missReasons) {

  /** A run whose misses are not explained. */
  public RunResult(NotRunnable notRunnable, int exitStatus, RunStatistics stats, RealPlugin plugin,
      Path layout, int[] materialized, RequestIngest ingested, Path keptSpool, int damagedRemoved, Duration wall,
      RemoteSummary remote) {
    this(notRunnable, exitStatus, stats, plugin, layout, materialized, ingested, keptSpool, damagedRemoved, wall, remote,
        WhyMissed.Summary.NONE);
  }

  /**
   * The lines after the summary line that say why the misses were not served, grouped (on stderr), e.g.
   * {@code xlac run:   2 not served: program changed (batch size (8 -> 16)): jit_step}; none without misses.
   */
  public List<String> missLines() {
    return missReasons.lines().stream().map(l -> "xlac run:   " + l).toList();
  }

  /** A run that used no remote tier. */
  public RunResult(NotRunnable notRunnable, int exitStatus, RunStatistics stats, RealPlugin plugin,
      Path layout, int[] materialized, RequestIngest ingested, Path keptSpool, int damagedRemoved, Duration wall) {
    this(notRunnable, exitStatus, stats, plugin, layout, materialized, ingested, keptSpool, damagedRemoved, wall, null);
  }

  static RunResult notRunnable(NotRunnable why, RealPlugin plugin, Path layout) {
    return new RunResult(why, why.status(), RunStatistics.NONE, plugin, layout, null, null, null, 0, Duration.ZERO);
  }

  /**
   * The one summary line, e.g. {@code xlac run: 7 compiles: 7 served from the cache, 0 compiled;
   * 4.21 s of compiling saved}, with the fallbacks when there were any.
   */
  public String line() {
    StringBuilder b = new StringBuilder("xlac run: ");
    b.append(stats.compiles()).append(stats.compiles() == 1 ? " compile: " : " compiles: ")
        .append(stats.hits()).append(" served from the cache, ")
        .append(stats.misses() + stats.fallbacks()).append(" compiled");
    if (stats.fallbacks() > 0) {
      b.append(" (").append(stats.fallbacks()).append(stats.fallbacks() == 1 ? " fallback" : " fallbacks")
          .append(": the cached executable could not be used)");
    }
    b.append(String.format(java.util.Locale.ROOT, "; %.2f s of compiling saved", seconds(stats.savedTime())));
    if (stats.misses() + stats.fallbacks() > 0) {
      b.append(String.format(java.util.Locale.ROOT, ", %.2f s spent compiling", seconds(stats.compileTime())));
    }
    if (ingested != null) {
      b.append("; recorded ").append(ingested.added()).append(" new");
    }
    if (remote != null) {
      b.append("; remote: ").append(remote.downloaded()).append(" fetched, ").append(remote.uploaded())
          .append(" written");
      if (remote.rejected() > 0) {
        b.append(", ").append(remote.rejected()).append(" rejected");
      }
      if (remote.failed() + remote.skipped() > 0) {
        b.append(", ").append(remote.failed() + remote.skipped()).append(" failed");
      }
      if (remote.unavailable() != null) {
        b.append(" (unavailable)");
      }
    }
    return b.toString();
  }

  /**
   * What {@code xlac run --require-remote} says after a command that succeeded when the remote failed it after the
   * command started (the recorded entries could not all be written through), or null when it did not.
   */
  public String remoteFailure() {
    if (remote == null || remote.unavailable() == null && remote.failed() == 0) {
      return null;
    }
    return "xlac run: --require-remote: " + (remote.unavailable() != null ? remote.unavailable()
        : "remote " + remote.remote() + ": " + remote.failed() + " runtime entries were not written through")
        + " (the recording is in the local cache; 'xlac cache push' sends it)";
  }

  /**
   * What {@code xlac run --require-hits} says when not every compile was served from the cache, or null when every
   * one was: one line naming how many were not and why ({@code misses}: nothing cached for the request;
   * {@code fallbacks}: a cached executable the plugin could not use). A run in which no compile went through the
   * proxy fails too: its framework did not load the proxy (or the command compiled nothing), so the
   * requirement cannot be shown to hold.
   */
  public String requireHitsFailure() {
    long notServed = stats.compiles() - stats.hits();
    if (stats.compiles() > 0 && notServed == 0) {
      return null;
    }
    if (stats.compiles() == 0) {
      return "xlac run: --require-hits: no compile went through xlac's proxy, so none was served from the cache"
          + " (did the command load its PJRT plugin through xlac?)";
    }
    List<String> why = new java.util.ArrayList<>();
    if (stats.misses() > 0) {
      why.add(stats.misses() + " not in the cache");
    }
    if (stats.fallbacks() > 0) {
      why.add(stats.fallbacks() + (stats.fallbacks() == 1 ? " cached executable" : " cached executables")
          + " the plugin could not use");
    }
    return "xlac run: " + notServed + " of " + stats.compiles() + " compiles were not served from the cache"
        + (why.isEmpty() ? "" : " (" + String.join(", ", why) + ")");
  }

  /**
   * {@code --report}: {@code compiles}, {@code hits}, {@code misses}, {@code fallbacks},
   * {@code compile_seconds} (spent compiling in this run), {@code saved_seconds} (the original compile
   * time of the hits), {@code recorded}, {@code unrecorded}, {@code fallback_reasons},
   * {@code miss_lookup_seconds} (the proxy's own time on the misses: key and lookup) and
   * {@code miss_overhead_percent} (that against the misses' compile time), {@code serve_seconds} (the
   * proxy's time on the hits: key, lookup, checksum and loading the executables), {@code preloaded} (executables
   * loaded ahead), {@code preload_hits} (hits they served), {@code preload_wasted} (loaded ahead, never claimed) and
   * {@code preload_hidden_seconds} (load time of those hits that the script did not wait for),
   * {@code exit_status}, {@code wall_seconds}, {@code plugin}, {@code plugin_sha256}, {@code layout},
   * {@code ingested} ({@code added}, {@code already_present}, {@code rejected}, {@code left_in_spool}: records kept in the spool; null without
   * {@code --record}), and {@code remote} (null when the run used no remote tier): {@code url}, {@code fetched} and
   * {@code fetched_bytes} (runtime entries fetched before the command), {@code already_local}, {@code rejected},
   * {@code written} and {@code written_bytes} (recorded entries written through), {@code already_there},
   * {@code failures} (fetches and writes the remote failed, or not started within the time bound) and
   * {@code unavailable} (the warning line, or null), and {@code miss_reasons}: one object per missed request
   * ({@link WhyMissed.Reason#toJson}).
   */
  public Map<String, Object> toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("compiles", stats.compiles());
    m.put("hits", stats.hits());
    m.put("misses", stats.misses());
    m.put("fallbacks", stats.fallbacks());
    m.put("compile_seconds", round(seconds(stats.compileTime())));
    m.put("saved_seconds", round(seconds(stats.savedTime())));
    m.put("recorded", stats.recorded());
    m.put("unrecorded", stats.unrecorded());
    m.put("fallback_reasons", stats.fallbackReasons());
    m.put("miss_lookup_seconds", seconds(stats.missLookupTime()));
    m.put("miss_overhead_percent", Math.round(stats.missOverheadPercent() * 10000) / 10000.0);
    m.put("serve_seconds", seconds(stats.serveTime()));
    m.put("preloaded", stats.preloaded());
    m.put("preload_hits", stats.preloadHits());
    m.put("preload_wasted", stats.preloadWasted());
    m.put("preload_hidden_seconds", seconds(stats.preloadHidden()));
    m.put("exit_status", exitStatus);
    m.put("wall_seconds", round(seconds(wall)));
    m.put("plugin", plugin == null ? null : plugin.path().toString());
    m.put("plugin_sha256", plugin == null ? null : plugin.sha256());
    m.put("layout", layout == null ? null : layout.toString());
    if (ingested == null) {
      m.put("ingested", null);
    } else {
      Map<String, Object> i = new LinkedHashMap<>();
      i.put("added", ingested.added());
      i.put("already_present", ingested.alreadyPresent());
      i.put("rejected", List.copyOf(ingested.rejected()));
      i.put("left_in_spool", ingested.leftInSpool());
      m.put("ingested", i);
    }
    if (remote == null) {
      m.put("remote", null);
    } else {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("url", remote.remote());
      r.put("fetched", remote.downloaded());
      r.put("fetched_bytes", remote.downloadedBytes());
      r.put("already_local", remote.alreadyLocal());
      r.put("rejected", remote.rejected());
      r.put("written", remote.uploaded());
      r.put("written_bytes", remote.uploadedBytes());
      r.put("already_there", remote.alreadyThere());
      r.put("failures", remote.failed() + remote.skipped());
      r.put("unavailable", remote.unavailable());
      m.put("remote", r);
    }
    m.put("miss_reasons", missReasons.toJson());
    return m;
  }
}
