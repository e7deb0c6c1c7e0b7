package dev.xlac.pipeline.recording;

import dev.xlac.cache.RequestIngest;
import dev.xlac.runtime.RunStatistics;

/**
 * What a capture recorded through the runtime proxy ({@code TraceSpec.Recording}).
 *
 * @param ingested what went into the cache
 * @param stats the proxy's statistics (compiles seen, recorded, not recorded)
 */
public record RecordingResult(RequestIngest ingested, RunStatistics stats) {
  /**
   * E.g. {@code recorded 7 compiles through the runtime proxy: 5 new in the cache, 2 already there}; null when
   * nothing was compiled through the proxy (a command that compiles nothing, or on a backend the proxy does not
   * front), so such a run's output is as it was without recording.
   */
  public String line() {
    if (stats.compiles() == 0 && stats.recorded() == 0 && ingested.added() == 0 && ingested.alreadyPresent() == 0
        && ingested.rejected().isEmpty()) {
      return null;
    }
    String s = String.format("recorded %d compile%s through the runtime proxy: %d new in the cache, %d already there",
        stats.recorded(), stats.recorded() == 1 ? "" : "s", ingested.added(), ingested.alreadyPresent());
    if (stats.unrecorded() > 0) {
      s += ", " + stats.unrecorded() + " could not be recorded";
    }
    if (!ingested.rejected().isEmpty()) {
      s += ", " + ingested.rejected().size() + " rejected";
    }
    return s;
  }
}
