package dev.xlac.pipeline.recording.archfixture;

import dev.xlac.pipeline.sources.TraceSpec;

/** A recording class that reaches up into a graph source: what {@code PipelineRulesTest} must report. */
public final class RecordsFromTheTrace {
  private RecordsFromTheTrace() {}

  public static boolean recording(TraceSpec trace) {
    return trace.recording() != null;
  }
}
