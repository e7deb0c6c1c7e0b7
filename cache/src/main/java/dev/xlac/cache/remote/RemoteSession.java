package dev.xlac.cache.remote;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.RemotePolicy;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.RemoteUnavailableException;
import dev.xlac.core.Sizes;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * The remote tier as a compile run uses it: a local miss reads through to the remote ({@link #readThrough}: the
 * object is checked, then stored locally, so the run counts it as cached), and every artifact the run compiles is
 * written through ({@link #writeThrough}) by uploader threads from a bounded queue, so the run never waits for the
 * remote; {@link #finish} drains the queue and returns the figures for the summary.
 *
 * <p>A remote that is down, slow or refuses access costs one warning line and the counts; the run goes on with its
 * local cache. With {@link RemotePolicy#REQUIRE} the remote is checked when the session opens (exit code 3 at once if it
 * fails), and a failure later makes {@link #finish} throw (exit code 3) after the run's results are stored
 * locally. A cache with {@code require-signed on} takes only objects signed by a key it trusts ({@link RemoteTrust});
 * write-through never signs (sign with {@code cache push --sign}).
 */
public final class RemoteSession implements AutoCloseable {
  /** The most artifacts waiting for upload. */
  static final int QUEUE_ENTRIES = 256;
  /** The most artifact bytes waiting for upload. */
  static final long QUEUE_BYTES = 256L << 20;
  static final int UPLOADERS = 4;
  /** Read-throughs at once in {@link #prefetch}. */
  static final int PREFETCH = 8;

  private final CacheStore store;
  private final RemoteTier tier;
  private final RemoteStats stats;
  private final RemoteTrust trust;
  private final Set<GraphFingerprint> graphsSent = ConcurrentHashMap.newKeySet();
  /** Keys the remote was asked for and did not have: not asked again in this run. */
  private final Set<ArtifactKey> absent = ConcurrentHashMap.newKeySet();
  private final List<Thread> uploaders = new ArrayList<>();
  private final Object lock = new Object();
  private final java.util.ArrayDeque<Upload> queue = new java.util.ArrayDeque<>();
  private final Consumer<String> notices;
  private final RemotePolicy policy;
  private long queuedBytes;
  private boolean closing;
  private boolean skipNoticed;

  private record Upload(ArtifactKey key, byte[] bytes, long compileMillis) {}

  private RemoteSession(CacheStore store, RemoteTier tier, RemoteTrust trust, RemotePolicy policy, Consumer<String> notices) {
    this.store = store;
    this.tier = tier;
    this.trust = trust;
    this.policy = policy;
    this.notices = notices;
    this.stats = tier == null ? null : new RemoteStats(tier.setting().url());
  }

  /** A session without a remote: read-through finds nothing, write-through sends nothing. */
  public static RemoteSession none(CacheStore store) {
    return new RemoteSession(store, null, null, RemotePolicy.OFF, line -> {});
  }

  /**
   * Opens the session for a run on {@code store}: none ({@link #enabled()} false) when the policy is OFF or the
   * cache has no remote (then REQUIRE is bad input, exit code 2).
   */
  public static RemoteSession open(CacheStore store, RemotePolicy policy, Consumer<String> notices)
      throws InterruptedException {
    return open(store, policy, notices, RemoteTier.Options.defaults(false, notices));
  }

  /** As {@link #open(CacheStore, RemotePolicy, Consumer)}, with the tier's timeouts and retries given. */
  public static RemoteSession open(CacheStore store, RemotePolicy policy, Consumer<String> notices,
      RemoteTier.Options options) throws InterruptedException {
    Optional<RemoteSetting> setting = policy.choose(store.directory(), store::remoteSetting);
    if (setting.isEmpty()) {
      return new RemoteSession(store, null, null, policy, notices);
    }
    RemoteSession[] self = new RemoteSession[1];
    // The tier warns once; under REQUIRE the line is kept for finish() instead, which fails the run with it.
    Consumer<String> warn = line -> {
      if (self[0] != null) {
        self[0].stats.unavailable(line);
      }
      if (policy != RemotePolicy.REQUIRE) {
        notices.accept(line);
      }
    };
    RemoteTier tier = RemoteTier.open(setting.get(), new RemoteTier.Options(options.connectTimeout(),
        options.readTimeout(), options.attempts(), false, warn));
    RemoteSession s = new RemoteSession(store, tier, RemoteTrust.of(store), policy, notices);
    self[0] = s;
    if (policy == RemotePolicy.REQUIRE) {
      try {
        tier.check();
      } catch (RemoteUnavailableException e) {
        tier.close();
        throw XlacException.environment(e.getMessage());
      }
    }
    for (int i = 0; i < UPLOADERS; i++) {
      s.uploaders.add(Thread.ofPlatform().daemon().name("xlac-remote-upload-" + i).start(s::uploadLoop));
    }
    return s;
  }

  /**
   * The figures so far (null without a remote), for other downloads of the same run to count into (a Slurm run's
   * shard results); {@link #finish} returns the same object.
   */
  public RemoteStats stats() {
    return stats;
  }

  /** Whether the run has a remote tier. */
  public boolean enabled() {
    return tier != null;
  }

  /**
   * After a local miss: the artifact from the remote, checked and stored locally; false when the remote does not
   * have it, rejects it (named on one line), or is unavailable (counted). The graph must be stored locally.
   */
  public boolean readThrough(ArtifactKey key) throws InterruptedException {
    if (tier == null) {
      return false;
    }
    if (absent.contains(key)) {
      return false;
    }
    String ak = RemoteObjects.artifactKey(key);
    Optional<byte[]> body;
    try {
      body = tier.get(ak);
    } catch (RemoteUnavailableException e) {
      return false;
    }
    if (body.isEmpty()) {
      absent.add(key);
      stats.misses.incrementAndGet();
      return false;
    }
    try {
      store.putArtifacts(List.of(RemoteEntries.artifact(key, body.get(), trust)));
    } catch (RemoteObjects.BadObjectException e) {
      RemoteSync.reject(tier, ak, e, stats, notices);
      return false;
    }
    stats.downloaded.incrementAndGet();
    stats.downloadedBytes.addAndGet(body.get().length);
    graphsSent.add(key.graph()); // another node wrote the artifact, so it wrote the graph before it
    return true;
  }

  /**
   * Reads through, {@value #PREFETCH} at a time, every key the local cache has no entry for (compiled or failed):
   * for a run that knows its graphs up front, so that it does not ask the remote one graph after another. A key the
   * remote lacks is remembered, so {@link #readThrough} does not ask again. A read-through that cannot store what it
   * read (a full disk: {@code DiskFullException}) stops the prefetch, and the first such failure is thrown once every
   * read-through under way has ended.
   */
  public void prefetch(java.util.Collection<ArtifactKey> keys) throws InterruptedException {
    if (tier == null) {
      return;
    }
    java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(PREFETCH);
    List<Thread> threads = new ArrayList<>();
    // A failure to store what was read (a full disk) ends the prefetch and is the caller's, like any store failure.
    var failed = new java.util.concurrent.atomic.AtomicReference<RuntimeException>();
    try {
      for (ArtifactKey key : keys) {
        if (!tier.available() || failed.get() != null) {
          break;
        }
        if (store.artifactInfo(key).isPresent()) {
          continue;
        }
        slots.acquire();
        threads.add(Thread.ofVirtual().name("xlac-remote-read").start(() -> {
          try {
            readThrough(key);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          } catch (RuntimeException e) {
            failed.compareAndSet(null, e);
          } finally {
            slots.release();
          }
        }));
      }
      for (Thread t : threads) {
        t.join();
      }
      if (failed.get() != null) {
        throw failed.get();
      }
    } catch (InterruptedException e) {
      threads.forEach(Thread::interrupt);
      throw e;
    }
  }

  /**
   * A compile result stored locally, to be uploaded: queued, never waited for. A full queue (more than
   * {@value #QUEUE_ENTRIES} artifacts or 256 MiB waiting) skips it, counted, with one line saying so.
   */
  public void writeThrough(ArtifactKey key, byte[] bytes, CompileInfo info) {
    if (tier == null) {
      return;
    }
    synchronized (lock) {
      if (!closing && queue.size() < QUEUE_ENTRIES && queuedBytes + bytes.length <= QUEUE_BYTES) {
        queue.add(new Upload(key, bytes, info.compileTime().toMillis()));
        queuedBytes += bytes.length;
        lock.notifyAll();
        return;
      }
      if (!skipNoticed) {
        skipNoticed = true;
        notices.accept("remote " + tier.setting().url() + ": the upload queue is full (" + QUEUE_ENTRIES
            + " artifacts or " + Sizes.human(QUEUE_BYTES) + "), so some results are not written through; 'xlac cache"
            + " push' uploads them later");
      }
    }
    stats.skipped.incrementAndGet();
  }

  private void uploadLoop() {
    while (true) {
      Upload u;
      synchronized (lock) {
        while (queue.isEmpty() && !closing) {
          try {
            lock.wait();
          } catch (InterruptedException e) {
            return;
          }
        }
        if (queue.isEmpty()) {
          return;
        }
        u = queue.poll();
        queuedBytes -= u.bytes().length;
      }
      try {
        upload(u);
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) { // e.g. the store closed under a run that was stopped
        stats.failed.incrementAndGet();
        stats.unavailable("remote " + tier.setting().url() + ": an upload failed: " + XlacException.reason(e));
      }
    }
  }

  private void upload(Upload u) throws InterruptedException {
    try {
      GraphFingerprint fp = u.key().graph();
      if (!graphsSent.contains(fp)) {
        Optional<byte[]> graph = RemoteEntries.graphObject(store, fp);
        if (graph.isEmpty()) {
          stats.failed.incrementAndGet();
          return;
        }
        count(tier.putIfAbsent(RemoteObjects.graphKey(fp), graph.get()), graph.get().length);
        graphsSent.add(fp);
      }
      byte[] body;
      try {
        body = RemoteObjects.artifact(u.key(), u.bytes(), u.compileMillis());
      } catch (RemoteObjects.TooLargeException e) {
        stats.skipped.incrementAndGet();
        return;
      }
      count(tier.putIfAbsent(RemoteObjects.artifactKey(u.key()), body), body.length);
    } catch (RemoteUnavailableException e) {
      stats.failed.incrementAndGet();
    }
  }

  private void count(RemoteTier.Put put, long bytes) {
    stats.put(put, bytes);
  }

  /**
   * Waits for the queue to drain and returns the figures (null without a remote). Under {@link RemotePolicy#REQUIRE}, a
   * remote that failed during the run is an {@link XlacException} (exit code 3) naming why.
   */
  public RemoteStats finish() throws InterruptedException {
    if (tier == null) {
      return null;
    }
    synchronized (lock) {
      closing = true;
      lock.notifyAll();
    }
    for (Thread t : uploaders) {
      t.join();
    }
    if (policy == RemotePolicy.REQUIRE && (stats.unavailable() != null || stats.failed() > 0)) {
      throw XlacException.environment((stats.unavailable() != null ? stats.unavailable()
          : "remote " + tier.setting().url() + ": " + stats.failed() + " uploads failed") + "; --require-remote: the run"
          + " fails (its results are in the local cache; 'xlac cache push' uploads them)");
    }
    return stats;
  }

  /** Stops the uploaders (what is still queued is not sent) and closes the client; safe twice. */
  @Override
  public void close() {
    if (tier == null) {
      return;
    }
    synchronized (lock) {
      closing = true;
      queue.clear();
      lock.notifyAll();
    }
    for (Thread t : uploaders) {
      t.interrupt();
    }
    for (Thread t : uploaders) {
      try {
        t.join(5_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    tier.close();
  }
}
