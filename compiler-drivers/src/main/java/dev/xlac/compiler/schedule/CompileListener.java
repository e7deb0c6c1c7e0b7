package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompileOutcome;

/**
 * Progress of a run, for display. Called from worker threads (implementations synchronize), after
 * the {@link ResultSink} for the same graph. Every method has a no-op default.
 */
public interface CompileListener {
  CompileListener NONE = new CompileListener() {};

  /** A graph was submitted (a duplicate of one already submitted is not reported again). */
  default void submitted(CompileJob job) {}

  /** A worker started compiling {@code job}; {@code attempt} counts from 1. */
  default void started(CompileJob job, int attempt) {}

  /** A transient failure will be retried; {@code why} says how (e.g. with fewer parallel jobs). */
  default void retrying(CompileJob job, CompileOutcome.Failure failure, String why) {}

  /** A graph is done (compiled, failed or not run). */
  default void finished(GraphResult result) {}
}
