package dev.xlac.pipeline;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.remote.RemoteSession;
import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.schedule.CompileJob;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.ResultSink;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.GraphFingerprint;
import java.util.Optional;

/**
 * The cache as a compile run for one compiler identity sees it: which graphs need compiling, the
 * job that reads a graph back when a worker takes it, and the {@link ResultSink} that stores each
 * artifact or failure. Shared by {@code parallel-compile PATH...} and the one-shot mode.
 */
final class CacheResults implements ResultSink {
  private final CacheStore store;
  private final CompilerIdentity identity;
  private final boolean retryFailed;
  private final RemoteSession remote;

  CacheResults(CacheStore store, CompilerIdentity identity, boolean retryFailed) {
    this(store, identity, retryFailed, null);
  }

  /** {@code remote}: read through to on a local miss, written through to after each compile (null: none). */
  CacheResults(CacheStore store, CompilerIdentity identity, boolean retryFailed, RemoteSession remote) {
    this.store = store;
    this.identity = identity;
    this.retryFailed = retryFailed;
    this.remote = remote;
  }

  /**
   * The result of a graph that needs no compile: cached, or failed in an earlier run and not
   * retried; empty when it must be compiled. Cached means the artifact's bytes are there and intact
   * ({@link CacheStore#lookup}); a damaged one is empty here, so it is compiled again, and the store
   * has said so on one line.
   */
  Optional<GraphResult> settled(GraphFingerprint fp, String module) {
    Optional<ArtifactInfo> entry = store.lookup(new ArtifactKey(fp, identity)); // a hit or miss in 'cache stat'
    if (entry.isPresent() && entry.get().status() == EntryStatus.COMPILED) {
      return Optional.of(GraphResult.cached(fp, module));
    }
    if (entry.isPresent() && !retryFailed) {
      return Optional.of(GraphResult.previouslyFailed(fp, module, entry.get().failureKind(),
          entry.get().failureMessage()));
    }
    if (remote != null && readThrough(new ArtifactKey(fp, identity))) { // checked, and now stored locally
      return Optional.of(GraphResult.cached(fp, module));
    }
    return Optional.empty();
  }

  /** Reads the graphs' artifacts the local cache lacks through from the remote tier, several at once (none: no-op). */
  void prefetch(java.util.Collection<GraphFingerprint> graphs) throws InterruptedException {
    if (remote != null) {
      remote.prefetch(graphs.stream().map(fp -> new ArtifactKey(fp, identity)).toList());
    }
  }

  private boolean readThrough(ArtifactKey key) {
    try {
      return remote.readThrough(key);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // the run is being stopped: a miss, and the caller sees the flag
      return false;
    }
  }

  /** A job whose module is read from the cache when a worker takes it. */
  CompileJob job(GraphFingerprint fp, String module) {
    return new CompileJob(fp, module, () -> store.readGraph(fp).orElseThrow(
        () -> new IllegalStateException("it is missing or damaged in the cache; run 'xlac cache verify'")));
  }

  @Override
  public void store(CompileJob job, CompileOutcome outcome) {
    ArtifactKey key = new ArtifactKey(job.fingerprint(), identity);
    switch (outcome) {
      case CompileOutcome.Success s -> {
        CompileInfo info = new CompileInfo(s.elapsed(), s.log());
        store.putArtifact(key, s.artifact(), info);
        if (remote != null) {
          remote.writeThrough(key, s.artifact(), info); // queued: the run does not wait for the upload
        }
      }
      case CompileOutcome.Failure f -> store.recordFailure(key, GraphResult.kindName(f.kind()), f.message(), f.log());
    }
  }
}
