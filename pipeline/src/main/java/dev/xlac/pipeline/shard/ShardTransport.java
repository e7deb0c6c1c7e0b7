package dev.xlac.pipeline.shard;

import dev.xlac.cache.CacheStore;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * How the graphs of a shard reach the node that compiles them, and how its results come back
 * ({@code parallel-compile --executor slurm}). The submitter {@link #sendInputs sends} each shard's graphs before
 * it submits, a task {@link #receiveInputs receives} its shard's and {@link #sendResults sends} back what its
 * node-local cache compiled with one line per graph, and the submitter {@link #receiveResults receives} them and
 * {@link #importResults imports} them into its cache.
 *
 * <p>Two implementations: {@link SharedDirectoryTransport} (a directory every node sees; results as a bundle) and
 * {@link RemoteShardTransport} (results through the cache's S3 tier, inputs still through the shared directory).
 */
public interface ShardTransport {
  /** One graph a shard compiles: where its serialized module is, with its fingerprint and name. */
  record Input(GraphFingerprint fingerprint, String moduleName, Path module) {}

  /**
   * One recorded request a shard compiles for the run's plugin ({@code parallel-compile --plugin NEW}): what the
   * runtime entry under {@code key} is made of. A node checks that {@code key} is the key of these sections (else
   * they were damaged on the way) and that {@code identityText} is its own plugin's.
   */
  record RequestInput(RequestKey key, String name, String format, byte[] program, byte[] options,
      String identityText) {
    /** Whether {@code key} is the key of the sections (the runtime's rule, {@link RequestKey#of}). */
    public boolean intact() {
      return RequestKey.of(format.getBytes(StandardCharsets.UTF_8), program, options,
          identityText.getBytes(StandardCharsets.UTF_8)).equals(key);
    }
  }

  /**
   * The transport itself failed on the submitter's side (its remote tier became unusable for the rest of the run):
   * no shard's results can come back through it, whichever attempt sends them, so the run stops (exit code 3)
   * rather than blaming the shards and submitting them again.
   */
  final class Failed extends dev.xlac.core.XlacException {
    private static final long serialVersionUID = 1L;

    public Failed(String message, Throwable cause) {
      super(dev.xlac.core.ExitCode.ENVIRONMENT, message, cause);
    }
  }

  /** The submitter's source of a shard's recorded requests, read when their inputs are written. */
  interface RequestSource {
    /** No requests (a run that compiles graphs only). */
    RequestSource NONE = key -> {
      throw new IllegalArgumentException(key.value() + " is not a request of this run");
    };

    RequestInput read(RequestKey key) throws IOException;
  }

  /**
   * What a task handed back.
   *
   * @param bundle an xlac bundle of the task's node-local cache (graphs, artifacts, failures, logs); null when the
   *     artifacts are elsewhere (the remote tier)
   * @param lines one line per graph of the shard ({@link ResultLines#of})
   * @param where where these results are, for messages and for {@link #discard}
   */
  record Results(Path bundle, List<String> lines, String where) {
    public Results(Path bundle, List<String> lines) {
      this(bundle, lines, bundle == null ? "" : bundle.toString());
    }
  }

  /** Submitter: makes the graphs of every non-empty shard of {@code plan} available to the tasks. */
  default void sendInputs(ShardPlan plan, CacheStore store) throws IOException {
    sendInputs(plan, store, RequestSource.NONE);
  }

  /**
   * Submitter: makes the graphs and recorded requests (read from {@code requests}) of every non-empty shard of
   * {@code plan} available to the tasks.
   */
  void sendInputs(ShardPlan plan, CacheStore store, RequestSource requests) throws IOException;

  /** Task: the graphs of {@code shard}, longest first (the plan's order). */
  List<Input> receiveInputs(int shard) throws IOException;

  /**
   * Task: the recorded requests of {@code shard}, in the plan's order; a damaged list is an IllegalArgumentException
   * (a damaged request is one that is not {@link RequestInput#intact}).
   */
  List<RequestInput> receiveRequests(int shard) throws IOException;

  /**
   * Task: hands back the results of {@code shard} under the name of this {@code attempt} (the Slurm job id of its
   * submission, {@code $SLURM_ARRAY_JOB_ID}), so that one attempt's lines never pair with another's artifacts: what
   * {@code node} (the node-local cache, open) compiled, and {@code lines}; {@code scratch} is a node-local file the
   * transport may use.
   */
  void sendResults(int shard, String attempt, CacheStore node, Path scratch, List<String> lines)
      throws IOException, InterruptedException;

  /** Submitter: the results of {@code shard}'s {@code attempt} once its task handed them back; empty until then. */
  Optional<Results> receiveResults(int shard, String attempt) throws IOException;

  /**
   * Submitter: stores what {@code back} carries in {@code store} (the artifacts of the graphs compiled under
   * {@code identity}, the failures). Damaged or missing results are an {@link dev.xlac.core.XlacException}: the
   * shard then counts as failed and is submitted again.
   */
  void importResults(CacheStore store, Results back, List<dev.xlac.compiler.schedule.GraphResult> lines,
      CompilerIdentity identity) throws InterruptedException;

  /**
   * Submitter: {@code back} could not be imported; it is removed or at least never handed out again by
   * {@link #receiveResults}, so the shard's next attempt's results are read instead.
   */
  void discard(int shard, Results back);

  /** What a task's command line needs besides the run directory to reach this transport (none by default). */
  default List<String> taskArguments() {
    return List.of();
  }

  /** Submitter: after the results of {@code shard} were imported, what they took may be removed. */
  void done(int shard);

  /** Where this transport is, for messages (e.g. the shared directory). */
  String describe();
}
