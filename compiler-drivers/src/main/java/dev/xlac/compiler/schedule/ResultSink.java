package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompileOutcome;

/**
 * Where a run's results are kept (the cache), called on the worker thread as soon as a graph's
 * final outcome is known, before the next job starts on that worker: a killed run keeps every
 * result it reported.
 *
 * <p>It receives artifacts and the failures that belong to the graph (compile errors, and crashes,
 * timeouts and out-of-memory after their retries). It never receives ENVIRONMENT failures (the
 * compiler could not run, which says nothing about the graph) or outcomes of a cancelled run.
 * An exception stops the run: {@link CompileScheduler#finish()} rethrows it.
 */
@FunctionalInterface
public interface ResultSink {
  void store(CompileJob job, CompileOutcome outcome) throws Exception;
}
