package dev.xlac.pipeline;

import dev.xlac.cache.CacheStore;
import dev.xlac.hlo.GraphFingerprint;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * How the graphs of a shard reach the node that compiles them, and how its results come back
 * ({@code parallel-compile --executor slurm}). The submitter {@link #sendInputs sends} each shard's graphs before
 * it submits, a task {@link #receiveInputs receives} its shard's and {@link #sendResults sends} back a bundle of
 * its node-local cache with one line per graph, and the submitter {@link #receiveResults receives} them.
 *
 * <p>One implementation today, {@link SharedDirectoryTransport} (a directory every node sees); the remote tier
 * (S3) can be a second one: graphs and artifacts are content addressed there already.
 */
public interface ShardTransport {
  /** One graph a shard compiles: where its serialized module is, with its fingerprint and name. */
  record Input(GraphFingerprint fingerprint, String moduleName, Path module) {}

  /**
   * What a task handed back.
   *
   * @param bundle an xlac bundle of the task's node-local cache (graphs, artifacts, failures, logs)
   * @param lines one line per graph of the shard ({@link ShardTask#resultLine})
   */
  record Results(Path bundle, List<String> lines) {}

  /** Submitter: makes the graphs of every non-empty shard of {@code plan} available to the tasks. */
  void sendInputs(ShardPlan plan, CacheStore store) throws IOException;

  /** Task: the graphs of {@code shard}, longest first (the plan's order). */
  List<Input> receiveInputs(int shard) throws IOException;

  /**
   * Task: hands back the results of {@code shard} under the name of this {@code attempt} (the Slurm job id of its
   * submission, {@code $SLURM_ARRAY_JOB_ID}), so that one attempt's lines never pair with another's bundle.
   */
  void sendResults(int shard, String attempt, Path bundle, List<String> lines) throws IOException;

  /** Submitter: the results of {@code shard}'s {@code attempt} once its task handed them back; empty until then. */
  Optional<Results> receiveResults(int shard, String attempt) throws IOException;

  /** Submitter: the results of {@code shard}'s {@code attempt} could not be imported; removes them. */
  void discard(int shard, String attempt);

  /** Submitter: after the results of {@code shard} were imported, what they took may be removed. */
  void done(int shard);

  /** Where this transport is, for messages (e.g. the shared directory). */
  String describe();
}
