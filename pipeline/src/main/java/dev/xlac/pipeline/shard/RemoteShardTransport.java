package dev.xlac.pipeline.shard;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheRemote;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.NewFailure;
import dev.xlac.cache.RemoteSummary;
import dev.xlac.cache.RemoteUnavailableException;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * A {@link ShardTransport} whose results travel through the cache's S3 tier ({@code xlac cache config remote}):
 * each task pushes the graphs it compiled and their artifacts from its node-local cache with the conditional puts of
 * {@link CacheRemote#pushProduced}, which lists nothing (so a graph another node or an earlier attempt wrote costs one
 * 412 and nothing is overwritten), then writes a small result manifest, and the submitter pulls the artifacts the manifest names
 * ({@link CacheRemote#pullArtifacts}, each checked before it is stored) and records the failures it names. The
 * shards' inputs, the batch script and the tasks' logs still go through the run directory ({@link
 * SharedDirectoryTransport}); no bundle is written.
 *
 * <p>The manifest of one attempt is {@code PREFIX/v1/runs/RUN/results/shard-I/ATTEMPT-UUID.tsv} (RUN: the run
 * directory's name; ATTEMPT: the attempt's Slurm job id; one line per graph, {@link ResultLines#of}), written
 * last, so its presence means the artifacts are there. The submitter reads only the current attempt's, and each
 * task writes its own, so results that could not be imported ({@link #discard}) are never read again.
 * The manifests stay, small, for a look at what each node did.
 *
 * <p>The tasks learn the remote from their command line ({@link #taskArguments}: {@code --remote URL
 * [--remote-endpoint URL]}); credentials never travel with it: a task finds them as any AWS client does
 * (the environment sbatch passes on, a profile, an instance role). The tier is opened with failures fatal
 * (exit code 3): a task that cannot push ends without results and is submitted again.
 */
public final class RemoteShardTransport implements ShardTransport {
  private final SharedDirectoryTransport inputs;
  private final CacheRemote tier;
  private final String run;
  private final Consumer<String> problems;
  private final Set<String> discarded = ConcurrentHashMap.newKeySet();
  /** The plugin SHA-256 of each recorded request sent, under which its runtime entry comes back. */
  private final java.util.Map<RequestKey, String> requestPlugins = new ConcurrentHashMap<>();

  /**
   * {@code runDir}: the run directory (inputs, logs); {@code tier}: the remote, owned by the caller, its failures
   * fatal (the run's results depend on it), the pulls counted into its summary.
   */
  public RemoteShardTransport(Path runDir, CacheRemote tier, Consumer<String> problems) {
    this.inputs = new SharedDirectoryTransport(runDir);
    this.tier = tier;
    this.run = inputs.runDirectory().getFileName().toString();
    this.problems = problems;
  }

  /** The key prefix (below the tier's prefix) of shard {@code shard}'s result manifests. */
  public String resultsPrefix(int shard) {
    return "v1/runs/" + run + "/results/shard-" + shard + "/";
  }

  /** An attempt's name as part of a key: letters, digits and '_' only (a '-' ends it). */
  private static String attemptName(String attempt) {
    if (!attempt.matches("[A-Za-z0-9_]+")) {
      throw new IllegalArgumentException("not an attempt name (a Slurm job id): '" + attempt.replaceAll("\\p{Cntrl}",
          " ") + "'");
    }
    return attempt;
  }

  /** What the submitter pulled: downloaded, not there, rejected (for the run's summary). */
  public RemoteSummary stats() {
    return tier.summary();
  }

  @Override
  public void sendInputs(ShardPlan plan, CacheStore store, RequestSource requests) throws IOException {
    inputs.sendInputs(plan, store, key -> {
      RequestInput in = requests.read(key); // the plugin it is keyed for files its entry in the remote
      dev.xlac.runtime.PluginIdentityText.field(in.identityText(), "plugin_sha256")
          .ifPresent(sha -> requestPlugins.put(key, sha));
      return in;
    });
  }

  @Override
  public List<Input> receiveInputs(int shard) throws IOException {
    return inputs.receiveInputs(shard);
  }

  @Override
  public List<RequestInput> receiveRequests(int shard) throws IOException {
    return inputs.receiveRequests(shard);
  }

  @Override
  public void sendResults(int shard, String attempt, CacheStore node, Path scratch, List<String> lines)
      throws IOException, InterruptedException {
    String name = attemptName(attempt);
    List<GraphFingerprint> compiled = new ArrayList<>();
    List<RequestKey> entries = new ArrayList<>();
    for (String line : lines) {
      GraphResult g = ResultLines.parse(line);
      if (g.status() == GraphResult.Status.COMPILED) {
        switch (g.fingerprint()) {
          case GraphFingerprint fp -> compiled.add(fp);
          case RequestKey key -> entries.add(key);
          default -> throw new IllegalArgumentException("a shard result names " + g.fingerprint().value());
        }
      }
    }
    if (!compiled.isEmpty() || !entries.isEmpty()) {
      // What this task compiled, and nothing else: no listing of the bucket (it may hold millions of objects).
      RemoteSummary pushed = tier.pushProduced(node, compiled, entries, problems);
      if (pushed.failed() > 0 || pushed.skipped() > 0) {
        throw new IOException(pushed.failed() + " objects could not be written and " + pushed.skipped()
            + " were too large for " + tier.setting().url() + " (" + pushed.uploads() + ")");
      }
    }
    String manifest = String.join("\n", lines) + "\n";
    try {
      tier.putIfAbsent(resultsPrefix(shard) + name + "-" + UUID.randomUUID() + ".tsv", manifest.getBytes(StandardCharsets.UTF_8));
    } catch (RemoteUnavailableException e) {
      throw new IOException(e.getMessage(), e);
    }
  }

  @Override
  public Optional<Results> receiveResults(int shard, String attempt) throws IOException {
    try {
      for (CacheRemote.Listed o : tier.list(resultsPrefix(shard) + attemptName(attempt) + "-")) {
        if (o.key().endsWith(".tsv") && !discarded.contains(o.key())) {
          Optional<byte[]> body = tier.get(o.key());
          if (body.isEmpty()) {
            continue;
          }
          List<String> lines = new String(body.get(), StandardCharsets.UTF_8).lines().filter(l -> !l.isEmpty())
              .toList();
          return Optional.of(new Results(null, lines, o.key()));
        }
      }
      return Optional.empty();
    } catch (RemoteUnavailableException e) { // the tier stays unusable for this run: nothing can come back
      throw failed("the results of shard " + shard, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  private Failed failed(String what, Exception e) {
    return new Failed("cannot take in " + what + " through " + tier.setting().url() + ", which failed: "
        + e.getMessage() + "; every job of the run was stopped, what was taken in before stays in the cache", e);
  }

  /**
   * Pulls the artifact of each graph the lines say compiled (under {@code identity}) and the runtime entry of each
   * recorded request they say compiled, and records each failure of a graph the lines name (kind and message; the
   * compiler's log stays on the node; runtime entries keep no failures). An artifact or entry that is missing or
   * rejected makes the results unusable (an {@link XlacException}): the shard is submitted again.
   */
  @Override
  public void importResults(CacheStore store, Results back, List<GraphResult> lines, CompilerIdentity identity)
      throws InterruptedException {
    List<ArtifactKey> keys = new ArrayList<>();
    List<RequestKey> entries = new ArrayList<>();
    List<NewFailure> failures = new ArrayList<>();
    for (GraphResult g : lines) {
      if (g.fingerprint() instanceof RequestKey request) {
        if (g.status() == GraphResult.Status.COMPILED) {
          entries.add(request);
        }
        continue;
      }
      if (!(g.fingerprint() instanceof GraphFingerprint fp)) {
        throw new IllegalArgumentException("a shard result line names " + g.fingerprint().value()
            + ", not a graph");
      }
      ArtifactKey key = new ArtifactKey(fp, identity);
      if (g.status() == GraphResult.Status.COMPILED) {
        keys.add(key);
      } else if (g.status() == GraphResult.Status.FAILED && g.failureKind() != null) {
        failures.add(new NewFailure(key, GraphResult.kindName(g.failureKind()), g.error(), null));
      }
    }
    RemoteSummary stats = tier.summary();
    long before = stats.downloaded() + stats.alreadyLocal();
    try {
      tier.pullArtifacts(store, keys, problems);
      tier.pullRuntimeEntries(store, entries, requestPlugins::get, problems);
    } catch (XlacException e) {
      if (!tier.available()) { // not these results' fault: the tier failed, and stays failed for this run
        throw failed("the results " + tier.address(back.where()) + " names", e);
      }
      throw e;
    }
    long got = stats.downloaded() + stats.alreadyLocal() - before;
    int wanted = keys.size() + entries.size();
    if (got < wanted) {
      throw XlacException.environment((wanted - got) + " of the " + wanted + (entries.isEmpty() ? " artifacts"
          : " artifacts and runtime entries") + " that "
          + tier.address(back.where()) + " names are missing or damaged in " + tier.setting().url());
    }
    if (!failures.isEmpty()) {
      store.recordFailures(failures);
    }
  }

  @Override
  public void discard(int shard, Results back) {
    discarded.add(back.where());
  }

  @Override
  public void done(int shard) {
    inputs.done(shard);
  }

  @Override
  public List<String> taskArguments() {
    List<String> a = new ArrayList<>(List.of("--remote", tier.setting().url()));
    tier.setting().endpoint().ifPresent(e -> a.addAll(List.of("--remote-endpoint", e.toString())));
    return a;
  }

  @Override
  public String describe() {
    return inputs.describe() + " (results through " + tier.setting().url() + ")";
  }
}
