package dev.xlac.pipeline;

import dev.xlac.cache.RequestIngest;
import dev.xlac.runtime.RunStatistics;

/**
 * What a capture recorded through the runtime proxy ({@link TraceSpec.Recording}).
 *
 * @param ingested what went into the cache
 * @param stats the proxy's statistics (compiles seen, recorded, not recorded)
 */
public record RecordingResult(RequestIngest ingested, RunStatistics stats) {
  /** E.g. {@code recorded 7 compiles through the runtime proxy: 5 new in the cache, 2 already there}. */
  public String line() {
    String s = String.format("recorded %d compile%s through the runtime proxy: %d new in the cache, %d already there",
        stats.recorded(), stats.recorded() == 1 ? "" : "s", ingested.added(), ingested.alreadyPresent());
    if (stats.unrecorded() > 0) {
      s += ", " + stats.unrecorded() + " could not be recorded";
    }
    if (!ingested.rejected().isEmpty()) {
      s += ", " + ingested.rejected().size() + " rejected";
    }
    if (stats.compiles() == 0) {
      s += " (nothing compiled through the proxy)";
    }
    return s;
  }
}
