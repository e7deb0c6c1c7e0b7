package dev.xlac.cache;

import dev.xlac.cache.remote.RemoteSession;
import dev.xlac.cache.remote.RemoteTier;
import java.time.Duration;
import java.util.Collection;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The cache of a compile run, both tiers behind one door: {@link #lookup} asks the local cache, then the remote tier
 * (an artifact found there is checked and pulled through into the local cache), and {@link #putArtifact} stores
 * locally, then writes through to the remote (queued: the run never waits for an upload). Without a remote (none
 * configured, or {@link RemotePolicy#OFF}) it is the local cache alone.
 *
 * <p>The failure policy is said here once: a remote that is down, slow or refuses access costs one warning line and
 * the counts ({@link #remoteSoFar}), never the run; with {@link RemotePolicy#REQUIRE} it is checked when the door
 * opens (exit code 3 at once if it fails), and a failure later makes {@link #finish} throw (exit code 3) after the
 * run's results are stored locally. The local store is the caller's (opened and closed by it); the remote side is
 * this door's, closed by {@link #close}.
 */
public final class TieredCache implements AutoCloseable {
  private final CacheStore local;
  private final RemoteSession remote;

  private TieredCache(CacheStore local, RemoteSession remote) {
    this.local = local;
    this.remote = remote;
  }

  /**
   * The door for a run on {@code local}: with the cache's remote tier unless {@code policy} is OFF or the cache has
   * none (then REQUIRE is bad input, exit code 2). Warnings go to {@code notices}.
   */
  public static TieredCache open(CacheStore local, RemotePolicy policy, Consumer<String> notices)
      throws InterruptedException {
    return new TieredCache(local, RemoteSession.open(local, policy, notices));
  }

  /**
   * As {@link #open(CacheStore, RemotePolicy, Consumer)}, with how long the remote may take to connect, how long it
   * may stay silent within a request, and how many times a request is tried.
   */
  public static TieredCache open(CacheStore local, RemotePolicy policy, Consumer<String> notices,
      Duration connectTimeout, Duration readTimeout, int attempts) throws InterruptedException {
    return new TieredCache(local, RemoteSession.open(local, policy, notices,
        new RemoteTier.Options(connectTimeout, readTimeout, attempts, false, notices)));
  }

  /** The local cache alone, as a door without a remote. */
  public static TieredCache localOnly(CacheStore local) {
    return new TieredCache(local, RemoteSession.none(local));
  }

  /** The local tier. */
  public CacheStore local() {
    return local;
  }

  /** Whether the run has a remote tier. */
  public boolean hasRemote() {
    return remote.enabled();
  }

  /**
   * The entry of {@code key}: the local one when it is compiled, or failed and failures are not retried; else the
   * remote's artifact, checked and pulled through into the local cache; else empty (compile it). The local lookup
   * counts as a hit or miss in {@code cache stat}.
   */
  public Optional<ArtifactInfo> lookup(ArtifactKey key, boolean retryFailed) throws InterruptedException {
    Optional<ArtifactInfo> entry = local.lookup(key);
    if (entry.isPresent() && (entry.get().status() == EntryStatus.COMPILED || !retryFailed)) {
      return entry;
    }
    if (remote.readThrough(key)) {
      return local.artifactInfo(key);
    }
    return Optional.empty();
  }

  /**
   * Pulls through, several at once, every artifact of {@code keys} the local cache has no entry for: for a run that
   * knows its graphs up front. A key the remote lacks is not asked for again by {@link #lookup}.
   */
  public void prefetch(Collection<ArtifactKey> keys) throws InterruptedException {
    remote.prefetch(keys);
  }

  /** Stores a compiled artifact locally, then writes it through to the remote (queued, never waited for). */
  public void putArtifact(ArtifactKey key, byte[] artifact, CompileInfo info) {
    local.putArtifact(key, artifact, info);
    remote.writeThrough(key, artifact, info);
  }

  /**
   * The remote's figures so far (null without a remote), live: a sharded run's (Slurm, Ray) shard results count into them too
   * ({@link #remoteForResults}).
   */
  public RemoteSummary remoteSoFar() {
    return remote.stats();
  }

  /**
   * The remote opened on its own for a sharded run's (Slurm, Ray) shard results (failures fatal, exit code 3), its pulls counted
   * into {@link #remoteSoFar}; empty without a remote, or when it already failed in this run.
   */
  public Optional<CacheRemote> remoteForResults(Consumer<String> warnings) {
    RemoteSummary soFar = remote.stats();
    if (soFar == null || soFar.unavailable() != null) {
      return Optional.empty();
    }
    return local.remoteSetting().map(s -> CacheRemote.open(s, remote.stats(), warnings));
  }

  /**
   * Waits for the write-through to drain and returns the remote's figures (null without a remote). Under
   * {@link RemotePolicy#REQUIRE}, a remote that failed during the run is exit code 3, naming why.
   */
  public RemoteSummary finish() throws InterruptedException {
    return remote.finish();
  }

  /** Stops the write-through (what is still queued is not sent) and closes the remote; safe twice. */
  @Override
  public void close() {
    remote.close();
  }
}
