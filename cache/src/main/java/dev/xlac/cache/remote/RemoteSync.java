package dev.xlac.cache.remote;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.RemoteUnavailableException;
import dev.xlac.cache.RequestInfo;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Consumer;

/**
 * {@code xlac cache push} and {@code xlac cache pull}: the local cache and the remote tier made to agree, all of
 * it or the graphs named. Both list the remote first (one listing per kind), so what is there already costs no
 * transfer; a conditional put still guards against another node writing the same object meanwhile. Uploads and
 * downloads run {@value #PARALLEL} at a time. A remote that fails is fatal for both (exit code 3); an object that is
 * damaged or not what its key says is named on one line, counted as rejected, and never stored.
 */
public final class RemoteSync {
  static final int PARALLEL = 8;

  private RemoteSync() {}

  /**
   * Uploads the graphs named (all when {@code graphs} is empty: then also every runtime entry) with their compiled
   * artifacts. Failed compiles stay local.
   */
  public static RemoteStats push(CacheStore store, RemoteTier tier, List<GraphFingerprint> graphs,
      Consumer<String> problems) throws InterruptedException {
    return push(store, tier, graphs, problems, Optional.empty());
  }

  /** As {@link #push(CacheStore, RemoteTier, List, Consumer)}, each object signed by {@code signer} when given. */
  public static RemoteStats push(CacheStore store, RemoteTier tier, List<GraphFingerprint> graphs,
      Consumer<String> problems, Optional<dev.xlac.cache.BundleSigningKey> signer) throws InterruptedException {
    return push(store, tier, graphs, problems, signer, false);
  }

  /**
   * As {@link #push(CacheStore, RemoteTier, List, Consumer, Optional)}; with {@code repair}, every object the push
   * would skip as present is read and checked ({@link RemoteObjects#open}), and a damaged one is replaced by the
   * local entry's object with a put conditioned on the damaged object's ETag ({@code If-Match}), so that one another
   * node repaired or replaced meanwhile is left alone.
   */
  public static RemoteStats push(CacheStore store, RemoteTier tier, List<GraphFingerprint> graphs,
      Consumer<String> problems, Optional<dev.xlac.cache.BundleSigningKey> signer, boolean repair)
      throws InterruptedException {
    RemoteStats stats = new RemoteStats(tier.setting().url());
    Set<String> present = new HashSet<>();
    try {
      for (RemoteObjects.Kind k : RemoteObjects.Kind.values()) {
        if (k != RemoteObjects.Kind.RUNTIME || graphs.isEmpty()) {
          tier.list(k.keyPrefix()).forEach(o -> present.add(o.key()));
        }
      }
    } catch (RemoteUnavailableException e) {
      throw XlacException.environment(e.getMessage());
    }
    List<GraphFingerprint> selected = graphs.isEmpty()
        ? store.graphs().stream().map(GraphInfo::fingerprint).toList() : graphs;
    try (Parallel p = new Parallel()) {
      for (GraphFingerprint fp : selected) {
        String gk = RemoteObjects.graphKey(fp);
        p.submit(() -> upload(tier, stats, present, gk, signed(() -> RemoteEntries.graphObject(store, fp), signer),
            problems, repair));
        for (ArtifactInfo a : store.entries(fp)) {
          if (a.status() == EntryStatus.COMPILED) {
            String ak = RemoteObjects.artifactKey(a.key());
            p.submit(() -> upload(tier, stats, present, ak, signed(() -> RemoteEntries.artifactObject(store, a), signer),
                problems, repair));
          }
        }
      }
      if (graphs.isEmpty()) {
        for (RequestInfo r : store.requests()) {
          if (!RemoteObjects.validPluginSha256(r.pluginSha256())) { // only an older xlac let one in; no cache takes it
            problems.accept("not uploaded runtime entry " + r.key().text() + ": its plugin SHA-256 '"
                + r.pluginSha256() + "' is not 64 hex digits");
            stats.skipped.incrementAndGet();
            continue;
          }
          String rk = RemoteObjects.runtimeKey(r.pluginSha256(), r.key());
          p.submit(() -> upload(tier, stats, present, rk, signed(() -> RemoteEntries.runtimeObject(store,
              r.pluginSha256(), r.key()), signer), problems, repair));
        }
      }
    }
    return stats;
  }

  /**
   * Uploads exactly the objects named, without listing the remote: each graph of {@code graphs} with its compiled
   * artifacts, and each runtime entry of {@code requests}, by conditional puts ({@code If-None-Match: *}) alone.
   * For a writer that knows what it produced (a Slurm shard's task): a listing costs as much as the bucket is large,
   * a conditional put of an object already there is a 412 that costs nothing, and as objects are content-addressed
   * and immutable, whichever writer wins wrote the same bytes. Counted as {@link #push}; a remote that fails is an
   * exit-3 {@link XlacException}.
   */
  public static RemoteStats pushProduced(CacheStore store, RemoteTier tier, java.util.Collection<GraphFingerprint> graphs,
      java.util.Collection<RequestKey> requests, Consumer<String> problems) throws InterruptedException {
    RemoteStats stats = new RemoteStats(tier.setting().url());
    Set<String> present = Set.of(); // nothing is assumed there: the put's condition finds out
    try (Parallel p = new Parallel()) {
      for (GraphFingerprint fp : graphs) {
        p.submit(() -> upload(tier, stats, present, RemoteObjects.graphKey(fp), () -> RemoteEntries.graphObject(store,
            fp), problems, false));
        for (ArtifactInfo a : store.entries(fp)) {
          if (a.status() == EntryStatus.COMPILED) {
            p.submit(() -> upload(tier, stats, present, RemoteObjects.artifactKey(a.key()),
                () -> RemoteEntries.artifactObject(store, a), problems, false));
          }
        }
      }
      for (RequestKey r : requests) {
        Optional<String> sha = store.requestInfo(r).map(RequestInfo::pluginSha256)
            .filter(RemoteObjects::validPluginSha256);
        if (sha.isEmpty()) { // not stored, or only an older xlac's: nothing to file it under
          problems.accept("not uploaded runtime entry " + r.text() + ": it is not in the cache with a valid plugin"
              + " SHA-256");
          stats.skipped.incrementAndGet();
          continue;
        }
        p.submit(() -> upload(tier, stats, present, RemoteObjects.runtimeKey(sha.get(), r),
            () -> RemoteEntries.runtimeObject(store, sha.get(), r), problems, false));
      }
    }
    return stats;
  }

  private interface ObjectSource {
    Optional<byte[]> get() throws IOException;
  }

  private static ObjectSource signed(ObjectSource source, Optional<dev.xlac.cache.BundleSigningKey> signer) {
    return signer.isEmpty() ? source : () -> source.get().map(b -> RemoteObjects.sign(b, signer.get()));
  }

  private static void upload(RemoteTier tier, RemoteStats stats, Set<String> present, String key, ObjectSource source,
      Consumer<String> problems, boolean repair) throws InterruptedException {
    Optional<RemoteTier.Tagged> damaged = Optional.empty();
    if (present.contains(key)) {
      damaged = repair ? damaged(tier, key) : Optional.empty();
      if (damaged.isEmpty()) {
        stats.alreadyThere.incrementAndGet();
        return;
      }
    }
    Optional<byte[]> body;
    try {
      body = source.get();
    } catch (RemoteObjects.TooLargeException e) {
      problems.accept("not uploaded " + tier.address(key) + ": " + e.getMessage());
      stats.skipped.incrementAndGet();
      return;
    } catch (IOException e) {
      problems.accept("not uploaded " + tier.address(key) + ": the local entry cannot be read: " + e.getMessage());
      stats.failed.incrementAndGet();
      return;
    }
    if (body.isEmpty()) { // damaged or gone locally; the store said which
      stats.failed.incrementAndGet();
      return;
    }
    try {
      if (damaged.isPresent()) {
        if (tier.replace(key, damaged.get().etag(), body.get()) == RemoteTier.Put.WRITTEN) {
          stats.repaired.incrementAndGet();
          stats.uploadedBytes.addAndGet(body.get().length);
          problems.accept("repaired " + tier.address(key) + ": replaced the damaged object with the local entry's");
        } else {
          stats.alreadyThere.incrementAndGet(); // another writer replaced it first
        }
      } else if (tier.putIfAbsent(key, body.get()) == RemoteTier.Put.WRITTEN) {
        stats.uploaded.incrementAndGet();
        stats.uploadedBytes.addAndGet(body.get().length);
      } else {
        stats.alreadyThere.incrementAndGet();
      }
    } catch (RemoteUnavailableException e) {
      stats.failed.incrementAndGet();
      throw XlacException.environment(e.getMessage());
    }
  }

  /** The object under {@code key} with its ETag when it is there and damaged (fails {@link RemoteObjects#open}). */
  private static Optional<RemoteTier.Tagged> damaged(RemoteTier tier, String key) throws InterruptedException {
    Optional<RemoteTier.Tagged> there;
    try {
      there = tier.getTagged(key);
    } catch (RemoteUnavailableException e) {
      throw XlacException.environment(e.getMessage());
    }
    if (there.isEmpty()) {
      return Optional.empty();
    }
    try {
      RemoteObjects.open(key, there.get().bytes());
      return Optional.empty();
    } catch (RemoteObjects.BadObjectException e) {
      return there;
    }
  }

  /**
   * Downloads the graphs named (full fingerprints, or unique prefixes of at least 6 hex digits of the remote's;
   * all when empty: then also every runtime entry) with all their artifacts, each checked before it is stored.
   */
  public static RemoteStats pull(CacheStore store, RemoteTier tier, List<String> graphs, Consumer<String> problems)
      throws InterruptedException {
    RemoteStats stats = new RemoteStats(tier.setting().url());
    RemoteTrust trust = RemoteTrust.of(store);
    try {
      List<GraphFingerprint> remoteGraphs = new ArrayList<>();
      for (RemoteTier.Listed o : tier.list(RemoteObjects.Kind.GRAPH.keyPrefix())) {
        GraphFingerprint fp = RemoteObjects.graphOf(o.key());
        if (fp != null) {
          remoteGraphs.add(fp);
        }
      }
      List<GraphFingerprint> selected = graphs.isEmpty() ? remoteGraphs : resolve(graphs, remoteGraphs, tier);
      Map<GraphFingerprint, List<String>> artifacts = new TreeMap<>();
      for (RemoteTier.Listed o : tier.list(RemoteObjects.Kind.ARTIFACT.keyPrefix())) {
        String[] parts = o.key().substring(RemoteObjects.Kind.ARTIFACT.keyPrefix().length()).split("/");
        if (parts.length == 2) {
          GraphFingerprint fp = RemoteObjects.graphOf(RemoteObjects.Kind.GRAPH.keyPrefix() + parts[0]);
          if (fp != null && parts[1].matches("[0-9a-f]{64}")) {
            artifacts.computeIfAbsent(fp, k -> new ArrayList<>()).add(o.key());
          }
        }
      }
      try (Parallel p = new Parallel()) {
        for (GraphFingerprint fp : selected) {
          p.submit(() -> pullGraph(store, tier, fp, artifacts.getOrDefault(fp, List.of()), stats, problems, trust));
        }
      }
      if (graphs.isEmpty()) {
        // Filed by plugin, or under the flat key of an older xlac: one object per request key, the filed one first.
        Map<RequestKey, RemoteObjects.RuntimeObject> runtime = new java.util.LinkedHashMap<>();
        for (RemoteTier.Listed o : tier.list(RemoteObjects.Kind.RUNTIME.keyPrefix())) {
          RemoteObjects.RuntimeObject r = RemoteObjects.runtimeOf(o.key());
          if (r != null && (r.pluginSha256() != null || !runtime.containsKey(r.request()))) {
            runtime.put(r.request(), r);
          }
        }
        try (Parallel p = new Parallel()) {
          for (RemoteObjects.RuntimeObject r : runtime.values()) {
            p.submit(() -> pullRuntime(store, tier, r, stats, problems, trust));
          }
        }
      }
    } catch (RemoteUnavailableException e) {
      throw XlacException.environment(e.getMessage());
    }
    return stats;
  }

  private static List<GraphFingerprint> resolve(List<String> texts, List<GraphFingerprint> remote, RemoteTier tier) {
    List<GraphFingerprint> out = new ArrayList<>();
    for (String t : texts) {
      String digits = GraphFingerprint.prefixDigits(t);
      if (digits == null) {
        throw XlacException.badInput("'" + t + "' is not a graph fingerprint (hlo1: and 64 hex digits, or at least"
            + " 6 of them)");
      }
      List<GraphFingerprint> hits = remote.stream().filter(fp -> RemoteObjects.hex(fp).startsWith(digits)).toList();
      if (hits.isEmpty()) {
        throw XlacException.badInput("no graph " + t + " in " + tier.setting().url());
      }
      if (hits.size() > 1) {
        throw XlacException.badInput("'" + t + "' names " + hits.size() + " graphs in " + tier.setting().url()
            + "; give more digits");
      }
      out.add(hits.getFirst());
    }
    return out;
  }

  private static void pullGraph(CacheStore store, RemoteTier tier, GraphFingerprint fp, List<String> artifactKeys,
      RemoteStats stats, Consumer<String> problems, RemoteTrust trust)
      throws InterruptedException, RemoteUnavailableException {
    String gk = RemoteObjects.graphKey(fp);
    if (store.graph(fp).isPresent()) {
      stats.alreadyLocal.incrementAndGet();
    } else {
      Optional<byte[]> body = tier.get(gk);
      if (body.isEmpty()) {
        stats.misses.incrementAndGet();
        return;
      }
      try {
        RemoteEntries.storeGraph(store, fp, body.get(), tier.address(gk), trust);
        stats.downloaded.incrementAndGet();
        stats.downloadedBytes.addAndGet(body.get().length);
      } catch (RemoteObjects.BadObjectException e) {
        reject(tier, gk, e, stats, problems);
        return;
      }
    }
    List<CacheStore.NewArtifact> batch = new ArrayList<>();
    for (String ak : artifactKeys) {
      String cid = ak.substring(ak.lastIndexOf('/') + 1);
      Optional<ArtifactInfo> local = store.entries(fp).stream()
          .filter(a -> a.key().compiler().digest().equals(cid)).findFirst();
      if (local.isPresent() && local.get().status() == EntryStatus.COMPILED) {
        stats.alreadyLocal.incrementAndGet();
        continue;
      }
      Optional<byte[]> body = tier.get(ak);
      if (body.isEmpty()) {
        stats.misses.incrementAndGet();
        continue;
      }
      try {
        RemoteObjects.Envelope e = RemoteObjects.open(ak, body.get());
        CompilerIdentity id = CompilerIdentity.decode(e.field("compiler"));
        ArtifactKey key = new ArtifactKey(fp, id);
        if (!RemoteObjects.artifactKey(key).equals(ak)) {
          throw new RemoteObjects.BadObjectException("it holds an artifact of another compiler (" + id.shortName() + ")");
        }
        batch.add(RemoteEntries.artifact(key, body.get(), trust));
        stats.downloaded.incrementAndGet();
        stats.downloadedBytes.addAndGet(body.get().length);
      } catch (RemoteObjects.BadObjectException e) {
        reject(tier, ak, e, stats, problems);
      } catch (RuntimeException e) { // a compiler identity that does not decode
        reject(tier, ak, new RemoteObjects.BadObjectException("its compiler identity cannot be read"), stats, problems);
      }
    }
    if (!batch.isEmpty()) {
      store.putArtifacts(batch);
    }
  }

  /**
   * Downloads the artifacts named into {@code store}, {@value #PARALLEL} at a time, each checked before it is stored
   * (one batch at the end); their graphs must be local. Counted into {@code stats}: downloaded, not there (misses),
   * rejected (each named on one line). A remote that fails is an exit-3 {@link XlacException}. For the results of a
   * Slurm shard, whose keys the submitter knows: no listing.
   */
  public static void pullArtifacts(CacheStore store, RemoteTier tier, java.util.Collection<ArtifactKey> keys,
      RemoteStats stats, Consumer<String> problems) throws InterruptedException {
    RemoteTrust trust = RemoteTrust.of(store);
    List<CacheStore.NewArtifact> batch = java.util.Collections.synchronizedList(new ArrayList<>());
    try (Parallel p = new Parallel()) {
      for (ArtifactKey key : keys) {
        p.submit(() -> {
          String ak = RemoteObjects.artifactKey(key);
          Optional<byte[]> body = tier.get(ak);
          if (body.isEmpty()) {
            stats.misses.incrementAndGet();
            return;
          }
          try {
            batch.add(RemoteEntries.artifact(key, body.get(), trust));
            stats.downloaded.incrementAndGet();
            stats.downloadedBytes.addAndGet(body.get().length);
          } catch (RemoteObjects.BadObjectException e) {
            reject(tier, ak, e, stats, problems);
          }
        });
      }
    }
    if (!batch.isEmpty()) {
      store.putArtifacts(List.copyOf(batch));
    }
  }

  /**
   * Downloads the runtime entries named into {@code store}, {@value #PARALLEL} at a time, each checked before it is
   * stored, without listing the remote (the results of a Slurm shard, whose keys the submitter knows), each from
   * where its plugin files it ({@code pluginOf}: the plugin's SHA-256 for a key; a key it does not know is not
   * fetched, so it stays missing). Counted as {@link #pullArtifacts}; an entry already local counts as such.
   */
  public static void pullRuntimeEntries(CacheStore store, RemoteTier tier, java.util.Collection<RequestKey> keys,
      java.util.function.Function<RequestKey, String> pluginOf, RemoteStats stats, Consumer<String> problems)
      throws InterruptedException {
    RemoteTrust trust = RemoteTrust.of(store);
    try (Parallel p = new Parallel()) {
      for (RequestKey key : keys) {
        String sha = pluginOf.apply(key);
        if (sha == null || !RemoteObjects.validPluginSha256(sha)) {
          problems.accept("runtime entry " + key.text() + ": no plugin is known for it; not fetched");
          continue;
        }
        var object = new RemoteObjects.RuntimeObject(RemoteObjects.runtimeKey(sha, key), sha, key);
        p.submit(() -> pullRuntime(store, tier, object, stats, problems, trust));
      }
    }
  }

  /**
   * Downloads one runtime object into {@code store} unless the store holds its request, checked before it is
   * stored: counted into {@code stats} (downloaded, already local, not there, rejected: named on one line).
   */
  static void pullRuntime(CacheStore store, RemoteTier tier, RemoteObjects.RuntimeObject object, RemoteStats stats,
      Consumer<String> problems, RemoteTrust trust) throws InterruptedException, RemoteUnavailableException {
    if (store.requestInfo(object.request()).isPresent()) {
      stats.alreadyLocal.incrementAndGet();
      return;
    }
    String rk = object.objectKey();
    Optional<byte[]> body = tier.get(rk);
    if (body.isEmpty()) {
      stats.misses.incrementAndGet();
      return;
    }
    try {
      RemoteEntries.storeRuntime(store, object, body.get(), store.directory(), trust);
      stats.downloaded.incrementAndGet();
      stats.downloadedBytes.addAndGet(body.get().length);
    } catch (RemoteObjects.BadObjectException e) {
      reject(tier, rk, e, stats, problems);
    } catch (IOException e) {
      String why = "writing a scratch file for " + tier.address(rk) + ": " + XlacException.reason(e);
      if (dev.xlac.cache.DiskFullException.isDiskFull(why)) { // said as the store says it: one kind of line
        throw new dev.xlac.cache.DiskFullException("cache " + store.directory() + ": disk full (" + why + ")");
      }
      throw XlacException.environment("cache " + store.directory() + ": " + why);
    }
  }

  static void reject(RemoteTier tier, String key, RemoteObjects.BadObjectException e, RemoteStats stats,
      Consumer<String> problems) {
    stats.rejected.incrementAndGet();
    problems.accept("rejected " + tier.address(key) + ": " + e.getMessage() + "; not stored locally ('xlac cache"
        + " push --repair' from a cache that holds the entry replaces a damaged object)");
  }

  /** Tasks {@value #PARALLEL} at a time on virtual threads; closing waits for all and rethrows the first failure. */
  static final class Parallel implements AutoCloseable {
    interface Task {
      void run() throws Exception;
    }

    private final ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
    private final java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(PARALLEL);
    private final List<Future<?>> futures = new ArrayList<>();

    void submit(Task t) throws InterruptedException {
      slots.acquire();
      futures.add(pool.submit(() -> {
        try {
          t.run();
          return null;
        } finally {
          slots.release();
        }
      }));
    }

    @Override
    public void close() throws InterruptedException {
      Throwable first = null;
      try {
        for (Future<?> f : futures) {
          try {
            f.get();
          } catch (ExecutionException e) {
            if (first == null) {
              first = e.getCause();
            }
          }
        }
      } finally {
        pool.shutdownNow();
      }
      if (first instanceof RuntimeException r) {
        throw r;
      } else if (first instanceof Error err) {
        throw err;
      } else if (first instanceof InterruptedException ie) {
        throw ie;
      } else if (first instanceof RemoteUnavailableException u) {
        throw XlacException.environment(u.getMessage());
      } else if (first != null) {
        throw new IllegalStateException(first);
      }
    }
  }
}
