package dev.xlac.pipeline.shard;

import java.util.List;
import java.util.Map;

/**
 * What differs between the engines a sharded compile runs on ({@link ShardRun}): how shards are submitted, how their
 * tasks show in the engine's queue, how a task ended, how tasks are stopped, where their logs are. Everything else
 * (the plan, the transport, retries, progress, results) is the run's. A task is one attempt of one shard, named by
 * its attempt, under which it hands back its results ({@link ShardTransport#sendResults}). The run closes it last.
 */
public interface ShardEngine extends AutoCloseable {
  /** Attempt {@code attempt} of {@code shard}. */
  record Task(int shard, String attempt) {}

  /**
   * One submission: the attempt of each shard submitted; how the first progress line names it ("Slurm job array
   * 123") and how a resubmission's line does ("job 125").
   */
  record Submitted(Map<Integer, String> attempts, String first, String again) {}

  /** How a task that left the queue ended: {@code handedBack} when it ended well, so its results were sent. */
  record Ended(boolean handedBack, String how) {}

  /** The engine's name in progress lines and reasons: "Slurm", "Ray". */
  String name();

  /**
   * Submits one attempt of each of {@code shards}, all or nothing: an {@link dev.xlac.core.XlacException} when the
   * engine refused (or, for an engine that submits in several calls, when {@link #cancelAll} came meanwhile), and
   * then nothing this call submitted is left running.
   */
  Submitted submit(List<Integer> shards) throws InterruptedException;

  /**
   * Every task the engine submitted for the run, or may have (a submission that failed after the engine may have
   * taken it): what the run stops at its end beyond those {@link #submit} returned. None for an engine that learns
   * of a task only from a submission that succeeded.
   */
  default List<Task> submitted() {
    return List.of();
  }

  /**
   * Of {@code tasks}, those still queued or running, each mapped to true when it waits for resources (pending);
   * null when the engine did not answer (looked at again next time).
   */
  Map<Task, Boolean> queued(List<Task> tasks) throws InterruptedException;

  /** How {@code task}, no longer queued, ended. */
  Ended ended(Task task) throws InterruptedException;

  /** Stops {@code tasks}; waits for the engine, never throws. */
  void cancel(List<Task> tasks);

  /** Stops everything this engine submitted for the run; never throws. */
  void cancelAll();

  /** {@code task} in messages: "job 123_4". */
  String describe(Task task);

  /** Where {@code task}'s log is, for messages. */
  String logWhere(Task task);

  /** The last non-blank line of {@code task}'s log, or null. */
  String logTail(Task task);

  /** Frees what the engine holds (a connection); after the run's last call to it, never throws. */
  @Override
  default void close() {}
}
