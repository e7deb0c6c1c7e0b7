package dev.xlac.cache;

import dev.xlac.cache.layout.NeuronCacheLayout;
import dev.xlac.cache.remote.NeuronRemoteLayout;
import dev.xlac.cache.remote.RemoteListing;
import dev.xlac.cache.remote.RemoteObjects;
import dev.xlac.cache.remote.RemoteRuntime;
import dev.xlac.cache.remote.RemoteStats;
import dev.xlac.cache.remote.RemoteSync;
import dev.xlac.cache.remote.RemoteTier;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.runtime.RequestKey;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The remote tier opened on its own, not bound to one local cache: for the commands whose point is the remote
 * ({@code cache push}, {@code pull}, {@code ls --remote}, {@code materialize s3://}), a Slurm run's shard results,
 * and {@code xlac run}'s runtime entries. A compile run's read-through and write-through go through
 * {@link TieredCache} instead. One connection (the one S3 client, closed by {@link #close}); what it moves is
 * counted into one {@link #summary}.
 *
 * <p>A remote that cannot be reached, times out or refuses access is <em>unavailable</em>, said once in one line:
 * opened as required, that is exit code 3; else the line goes to the warnings and is kept in the summary, and
 * each later call fails at once with {@link RemoteUnavailableException}.
 */
public final class CacheRemote implements AutoCloseable {
  private final RemoteTier tier;
  private final RemoteStats counts;
  private final Reopen reopen;

  /** How to open the same remote again, counting into the same figures. */
  private interface Reopen {
    CacheRemote with(boolean required);
  }

  private CacheRemote(RemoteTier tier, RemoteStats counts, Reopen reopen) {
    this.tier = tier;
    this.counts = counts;
    this.reopen = reopen;
  }

  /**
   * The remote {@code store} is configured with, for a command whose point is the remote: a failure is fatal (exit
   * code 3); no setting is bad input (exit code 2).
   */
  public static CacheRemote forCommand(CacheStore store, Consumer<String> warnings) {
    RemoteSetting setting = store.remoteSetting().orElseThrow(() -> XlacException.badInput("cache "
        + store.directory() + " has no remote tier: set one with 'xlac cache config remote s3://BUCKET/PREFIX"
        + " [--endpoint URL]'"));
    return open(setting, warnings);
  }

  /** The remote at {@code setting}, failures fatal (exit code 3). */
  public static CacheRemote open(RemoteSetting setting, Consumer<String> warnings) {
    return open(setting, new RemoteStats(setting.url()), warnings);
  }

  /** As {@link #open(RemoteSetting, Consumer)}, counting into {@code counts} (a compile run's figures). */
  static CacheRemote open(RemoteSetting setting, RemoteStats counts, Consumer<String> warnings) {
    return new CacheRemote(RemoteTier.open(setting, RemoteTier.Options.defaults(true, warnings)), counts, null);
  }

  /**
   * The remote for {@code xlac run}, with its own timeouts: a failure is exit code 3 when {@code required}, else one
   * line to {@code notices}, kept in the summary.
   */
  public static CacheRemote forRun(RemoteSetting setting, boolean required, Duration connectTimeout,
      Duration readTimeout, Consumer<String> notices) {
    return forRun(setting, required, connectTimeout, readTimeout, notices, new RemoteStats(setting.url()));
  }

  private static CacheRemote forRun(RemoteSetting setting, boolean required, Duration connectTimeout,
      Duration readTimeout, Consumer<String> notices, RemoteStats counts) {
    Consumer<String> warn = line -> {
      counts.unavailable(line);
      notices.accept(line);
    };
    RemoteTier tier = RemoteTier.open(setting, new RemoteTier.Options(connectTimeout, readTimeout, 2, required, warn));
    return new CacheRemote(tier, counts, again -> forRun(setting, again, connectTimeout, readTimeout, notices, counts));
  }

  /**
   * A new connection to the same remote, with the same timeouts and notices, counting into the same summary (this
   * one may be closed already): {@code xlac run} holds the remote only while it uses it.
   */
  public CacheRemote reopen(boolean required) {
    if (reopen == null) {
      throw new IllegalStateException("only a remote opened for a run is opened again");
    }
    return reopen.with(required);
  }

  public RemoteSetting setting() {
    return tier.setting();
  }

  /** What was moved so far, live. */
  public RemoteSummary summary() {
    return counts;
  }

  /** Keeps why the remote could not be used (the first reason given stays). */
  public void noteUnavailable(String why) {
    counts.unavailable(why);
  }

  /** Whether a failure made the remote unavailable. */
  public boolean available() {
    return tier.available();
  }

  /** Checks that the remote can be listed (one small request). */
  public void check() throws RemoteUnavailableException, InterruptedException {
    tier.check();
  }

  /** The full {@code s3://} address of an object, for messages. */
  public String address(String key) {
    return tier.address(key);
  }

  // ---------------------------------------------------------------- commands

  /**
   * {@code cache push}: the graphs named (all when empty: then also every runtime entry) with their compiled
   * artifacts, each object signed by {@code signer} when given; with {@code repair}, damaged objects are replaced.
   */
  public RemoteSummary push(CacheStore store, List<GraphFingerprint> graphs, Consumer<String> problems,
      Optional<BundleSigningKey> signer, boolean repair) throws InterruptedException {
    return RemoteSync.push(store, tier, graphs, problems, signer, repair);
  }

  /** {@code cache pull}: the graphs named (fingerprints or unique prefixes; all when empty) with their artifacts. */
  public RemoteSummary pull(CacheStore store, List<String> graphs, Consumer<String> problems)
      throws InterruptedException {
    return RemoteSync.pull(store, tier, graphs, problems);
  }

  /**
   * One object of {@code cache ls --remote}.
   *
   * @param kind graph, artifact or runtime
   * @param name a graph's fingerprint, an artifact's {@code fingerprint/compiler-id}, a runtime entry's
   *     {@code plugin-sha256/request-key} (an older xlac's: the request key alone)
   * @param key the object's key below the prefix
   */
  public record Row(String kind, String name, String key, long bytes, Instant lastModified) {}

  /** {@code cache ls --remote}: every object, graphs first, then artifacts, then runtime entries. */
  public List<Row> list() throws InterruptedException {
    return RemoteListing.list(tier).stream()
        .map(r -> new Row(r.kind(), r.name(), r.key(), r.bytes(), r.lastModified())).toList();
  }

  /** What {@link #materializeNeuron} wrote: the local materialize's figures and the uploads. */
  public record NeuronUpload(NeuronCacheLayout.MaterializeResult layout, RemoteSummary uploads) {}

  /**
   * Where {@code s3://BUCKET/PREFIX} is for {@code materialize s3://}: with {@code endpoint} when given, else the
   * cache's remote endpoint when the bucket is the remote's, else AWS.
   */
  public static RemoteSetting neuronTarget(CacheStore store, String url, String endpoint) {
    return NeuronRemoteLayout.target(store, url, endpoint);
  }

  /** {@code materialize --layout neuron s3://...}: the Neuron cache tree written into this remote's prefix. */
  public NeuronUpload materializeNeuron(CacheStore store, Path scratchParent, Consumer<String> problems)
      throws InterruptedException {
    NeuronRemoteLayout.Result r = NeuronRemoteLayout.materialize(store, tier, scratchParent, problems);
    return new NeuronUpload(r.layout(), r.uploads());
  }

  // ---------------------------------------------------------------- a Slurm run's shard results

  /**
   * Uploads exactly the graphs (with their compiled artifacts) and runtime entries named, by conditional puts alone
   * (no listing): a shard's task. Its own figures; a remote that fails is exit code 3.
   */
  public RemoteSummary pushProduced(CacheStore store, Collection<GraphFingerprint> graphs,
      Collection<RequestKey> requests, Consumer<String> problems) throws InterruptedException {
    return RemoteSync.pushProduced(store, tier, graphs, requests, problems);
  }

  /** Downloads the artifacts named into {@code store}, each checked first; counted into {@link #summary}. */
  public void pullArtifacts(CacheStore store, Collection<ArtifactKey> keys, Consumer<String> problems)
      throws InterruptedException {
    RemoteSync.pullArtifacts(store, tier, keys, counts, problems);
  }

  /**
   * Downloads the runtime entries named into {@code store}, each from where its plugin files it ({@code pluginOf}:
   * the plugin's SHA-256 for a key); counted into {@link #summary}.
   */
  public void pullRuntimeEntries(CacheStore store, Collection<RequestKey> keys, Function<RequestKey, String> pluginOf,
      Consumer<String> problems) throws InterruptedException {
    RemoteSync.pullRuntimeEntries(store, tier, keys, pluginOf, counts, problems);
  }

  /** One listed object: its key below the prefix, its size, when it was written. */
  public record Listed(String key, long size, Instant lastModified) {}

  /** Writes a small object of the caller's own (a shard's result manifest) unless one is there already. */
  public void putIfAbsent(String key, byte[] body) throws RemoteUnavailableException, InterruptedException {
    tier.putIfAbsent(key, body);
  }

  /** The object under {@code key} whole; empty when there is none. */
  public Optional<byte[]> get(String key) throws RemoteUnavailableException, InterruptedException {
    return tier.get(key);
  }

  /** Every object under {@code prefix}, in key order. */
  public List<Listed> list(String prefix) throws RemoteUnavailableException, InterruptedException {
    return tier.list(prefix).stream().map(o -> new Listed(o.key(), o.size(), o.lastModified())).toList();
  }

  // ---------------------------------------------------------------- xlac run's runtime entries

  /** Runtime entries the remote holds for one plugin, as {@link #runtimeEntries} found them. */
  public static final class RuntimeEntries {
    private final List<RemoteObjects.RuntimeObject> objects;

    private RuntimeEntries(List<RemoteObjects.RuntimeObject> objects) {
      this.objects = objects;
    }

    public boolean isEmpty() {
      return objects.isEmpty();
    }
  }

  /** The runtime entries the remote files under {@code pluginSha256} that {@code wanted} takes (one listing). */
  public RuntimeEntries runtimeEntries(String pluginSha256, Predicate<RequestKey> wanted)
      throws RemoteUnavailableException, InterruptedException {
    return new RuntimeEntries(RemoteRuntime.list(tier, pluginSha256).stream().filter(o -> wanted.test(o.request()))
        .toList());
  }

  /**
   * Pulls the entries whose request {@code store} does not hold into it, each checked first; what was not started
   * before {@code deadlineNanos} (a {@link System#nanoTime} value) is counted as skipped.
   */
  public void fetchRuntime(CacheStore store, RuntimeEntries entries, long deadlineNanos, Consumer<String> problems)
      throws InterruptedException {
    RemoteRuntime.fetch(store, tier, entries.objects, deadlineNanos, counts, problems);
  }

  /** Writes the runtime entries named through, as {@code cache push} writes them. */
  public void writeRuntimeThrough(CacheStore store, Collection<RequestInfo> entries) throws InterruptedException {
    RemoteRuntime.writeThrough(store, tier, entries, counts);
  }

  /** Counts the entries named as failed uploads: the remote was unavailable before they could be tried. */
  public void notWritten(Collection<RequestInfo> entries) {
    RemoteRuntime.notWritten(entries, counts);
  }

  @Override
  public void close() {
    tier.close();
  }
}
