package dev.xlac.pipeline;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.RequestIngest;
import dev.xlac.cache.TieredCache;
import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.schedule.CompileJob;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.ResultSink;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ProgramKey;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The cache as a compile run for one compiler identity sees it: which graphs and recorded requests need
 * compiling ({@link #settled}, the one rule), the job that reads a program back when a worker takes it, and the
 * {@link ResultSink} that stores each artifact or failure. Shared by every form of {@code parallel-compile}.
 */
final class CacheResults implements ResultSink {
  private final TieredCache tiers;
  private final CacheStore store;
  private final CompilerIdentity identity;
  private final boolean retryFailed;
  private final Map<ProgramKey, CompileWork.Request> requests = new ConcurrentHashMap<>();

  CacheResults(CacheStore store, CompilerIdentity identity, boolean retryFailed) {
    this(TieredCache.localOnly(store), identity, retryFailed);
  }

  /** {@code tiers}: the run's cache, looked up (local, then the remote) and stored into (local, then the remote). */
  CacheResults(TieredCache tiers, CompilerIdentity identity, boolean retryFailed) {
    this.tiers = tiers;
    this.store = tiers.local();
    this.identity = identity;
    this.retryFailed = retryFailed;
  }

  /** As {@link #settled(CompileWork)} for a graph. */
  Optional<GraphResult> settled(GraphFingerprint fp, String module) {
    return settled(new CompileWork.Graph(fp, module));
  }

  /**
   * The one rule of what lacks an artifact for this compiler. Empty when it must be compiled; else its result:
   * cached, or failed in an earlier run and not retried.
   *
   * <p>A graph is cached when the artifact's bytes are there and intact ({@link TieredCache#lookup}: locally, or
   * pulled through from the remote tier); a damaged one is empty here, so it is compiled again, and the store has
   * said so on one line. A recorded request is cached
   * when the cache holds a runtime entry under the key the proxy computes for this plugin (a damaged executable
   * there is the proxy's to find: it falls back, and {@code xlac run} deletes the entry). The cache keeps no
   * failure records for runtime entries, so a request whose compile failed is compiled again by the next run.
   */
  Optional<GraphResult> settled(CompileWork work) {
    return switch (work) {
      case CompileWork.Graph g -> {
        Optional<ArtifactInfo> entry = lookup(new ArtifactKey(g.key(), identity));
        if (entry.isPresent() && entry.get().status() == EntryStatus.COMPILED) {
          yield Optional.of(GraphResult.cached(g.key(), g.name()));
        }
        if (entry.isPresent()) { // a failure, not retried
          yield Optional.of(GraphResult.previouslyFailed(g.key(), g.name(), entry.get().failureKind(),
              entry.get().failureMessage()));
        }
        yield Optional.empty();
      }
      case CompileWork.Request r -> store.requestInfo(r.key()).isPresent()
          ? Optional.of(GraphResult.cached(r.key(), r.name())) : Optional.empty();
    };
  }

  /** Reads the graphs' artifacts the local cache lacks through from the remote tier, several at once (none: no-op). */
  void prefetch(java.util.Collection<GraphFingerprint> graphs) throws InterruptedException {
    tiers.prefetch(graphs.stream().map(fp -> new ArtifactKey(fp, identity)).toList());
  }

  private Optional<ArtifactInfo> lookup(ArtifactKey key) {
    try {
      return tiers.lookup(key, retryFailed);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // the run is being stopped: a miss, and the caller sees the flag
      return Optional.empty();
    }
  }

  /** As {@link #job(CompileWork)} for a graph. */
  CompileJob job(GraphFingerprint fp, String module) {
    return job(new CompileWork.Graph(fp, module));
  }

  /** A job whose program is read from the cache when a worker takes it. */
  CompileJob job(CompileWork work) {
    return switch (work) {
      case CompileWork.Graph g -> new CompileJob(g.key(), g.name(), () -> store.readGraph(g.key()).orElseThrow(
          () -> new IllegalStateException("it is missing or damaged in the cache; run 'xlac cache verify'")));
      case CompileWork.Request r -> {
        requests.put(r.key(), r);
        yield new CompileJob(r.key(), r.name(), () -> program(r), r.format(), r.options());
      }
    };
  }

  /** The program the framework sends the run's plugin, from the recorded request. */
  private byte[] program(CompileWork.Request r) {
    return RecordedRequests.program(store, r);
  }

  @Override
  public void store(CompileJob job, CompileOutcome outcome) {
    CompileWork.Request request = requests.get(job.fingerprint());
    if (request != null) {
      storeRequest(request, outcome);
      return;
    }
    ArtifactKey key = new ArtifactKey((GraphFingerprint) job.fingerprint(), identity);
    switch (outcome) {
      case CompileOutcome.Success s -> {
        CompileInfo info = new CompileInfo(s.elapsed(), s.log());
        tiers.putArtifact(key, s.artifact(), info); // the upload is queued: the run does not wait for it
      }
      case CompileOutcome.Failure f -> store.recordFailure(key, GraphResult.kindName(f.kind()), f.message(), f.log());
    }
  }

  /**
   * A compiled request becomes a runtime entry under the new plugin's key, with its program, the options as
   * recorded and the new plugin's identity text, so the cache recomputes and checks the key as for any record. A
   * failure is not stored (runtime entries have no failure records); the run reports it with its log.
   */
  private void storeRequest(CompileWork.Request r, CompileOutcome outcome) {
    if (!(outcome instanceof CompileOutcome.Success s)) {
      return;
    }
    RecordedRequest entry = new RecordedRequest(r.key(), r.format().getBytes(StandardCharsets.UTF_8), program(r),
        r.options(), r.identityText(), s.artifact(), s.elapsed().toNanos());
    RequestIngest in = store.putRequests(List.of(entry));
    if (!in.rejected().isEmpty()) {
      throw new IllegalStateException("the cache refused the runtime entry compiled for " + r.key().text() + ": "
          + in.rejected().getFirst());
    }
  }

  /** Whether a key is a recorded request's (for the report: its log is not in the cache). */
  static boolean isRequest(ProgramKey key) {
    return key instanceof RequestKey;
  }
}
