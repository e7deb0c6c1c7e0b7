package dev.xlac.cache;

import dev.xlac.cache.bundle.BundleExporter;
import dev.xlac.cache.bundle.BundleImporter;
import dev.xlac.cache.layout.LayoutEntryFiles;
import dev.xlac.cache.ops.CacheListing;
import dev.xlac.cache.ops.GraphResolver;
import dev.xlac.cache.ops.PruneByLastAccess;
import dev.xlac.cache.ops.SizeLimit;
import dev.xlac.cache.ops.TrustConfig;
import dev.xlac.cache.repair.CacheVerifier;
import dev.xlac.cache.store.ArtifactWrites;
import dev.xlac.cache.store.CacheModes;
import dev.xlac.cache.store.PendingHits;
import dev.xlac.cache.store.Store;
import dev.xlac.core.Sizes;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.SiblingTemporaries;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.Consumer;

/**
 * xlac's persistent compilation cache: graphs (fingerprint to HLO module) and the artifacts
 * compiled from them (graph fingerprint + compiler identity to bytes), in RocksDB.
 *
 * <p>This class is the one public door: it opens the {@link Store} (transactions, values, schema,
 * usage counters, artifacts kept in memory; package {@code store}) and hands each operation to the
 * package that owns it: pruning, the size limit, listing, trust settings and fingerprint lookups to
 * {@code ops}, bundles to {@code bundle}. Those packages work on the store's narrow API only.
 *
 * <p>Invariants (see cache/README.md): every update that touches several records is one atomic
 * WriteBatch, which also rewrites the running totals; every artifact record refers to a stored
 * graph; every value carries a SHA-256 checked on each read, and a value that is missing or fails
 * it is a miss, never returned, and reported; one process writes at a time (the lock names it),
 * while any number read through RocksDB read-only instances. Concurrent lookups of one key share
 * one load, and a failed load is not kept.
 *
 * <p>Durability: {@link #putArtifact} and {@link #recordFailure} fsync before returning; other
 * writes reach the operating system before returning (so they survive the process being killed)
 * and are fsynced when the operation that made them ends. Imports skip the write-ahead log and end
 * with one flush, atomic across the column families, that leaves them in fsynced files.
 */
public final class CacheStore implements AutoCloseable {
  /** How a store is opened. */
  public enum Mode {
    /** Reads only; works while another process writes. */
    READ_ONLY,
    /** Takes the cache's single-writer lock. */
    READ_WRITE
  }

  /**
   * The version of the key space and record layouts this build writes. Version 2 added Neuron names
   * to graph records (graph_meta format 2); version 3 stores values larger than 8 MiB in chunks.
   * Every record of an older version is valid in the newer one, so an older cache is read as it is
   * and upgraded by rewriting the version when opened for writing.
   */
  public static final int SCHEMA_VERSION = Store.SCHEMA_VERSION;
  private static final System.Logger LOG = System.getLogger(CacheStore.class.getName());

  private final Store store;
  private boolean closed;
  private boolean runtimeLayoutHoldsRemoved;

  private CacheStore(Store store) {
    this.store = store;
    store.onOverLimit(() -> SizeLimit.enforce(store));
  }

  /** Opens the cache for writing when a run is ready for it (the CLI waits for another writer as {@code --wait} says). */
  @FunctionalInterface
  public interface Opener {
    CacheStore open() throws InterruptedException;
  }

  /**
   * Where the runs the fast start finished without a JVM leave their runtime hits for the next open for writing to
   * count ({@code CACHE/runtime/pending-hits}; cache/README.md, "Runtime-hit records").
   */
  public static Path pendingRuntimeHits(Path dir) {
    return dir.resolve(dev.xlac.cache.store.PendingHits.DIRECTORY);
  }

  /** Opens (creating when needed) the cache at {@code dir}; see {@link #open(Path, Mode, Duration, Consumer)}. */
  public static CacheStore open(Path dir, Mode mode, Duration lockWait) throws InterruptedException {
    return open(dir, mode, lockWait, m -> LOG.log(System.Logger.Level.WARNING, m));
  }

  /**
   * Opens the cache at {@code dir}.
   *
   * @param lockWait for {@link Mode#READ_WRITE}: how long to wait for another writer to finish
   *     ({@link Duration#ZERO}: fail at once with a message naming it; null: wait as long as it takes)
   * @param notices receives one-line notes for the user: waiting for the lock, damaged entries met
   * @throws XlacException exit code 3 when the cache is locked, on a newer schema, or the disk is full.
   *     {@link Mode#READ_ONLY} creates nothing: a directory without a cache reads as an empty one.
   *     {@link Mode#READ_WRITE} first counts the runtime hits that fast-started runs left ({@link PendingHits}).
   */
  public static CacheStore open(Path dir, Mode mode, Duration lockWait, Consumer<String> notices)
      throws InterruptedException {
    return open(dir, mode, lockWait, notices, Clock.systemUTC());
  }

  static CacheStore open(Path dir, Mode mode, Duration lockWait, Consumer<String> notices,
      Clock clock) throws InterruptedException {
    Store store = Store.open(dir, mode == Mode.READ_WRITE, lockWait, notices, clock);
    return mode == Mode.READ_WRITE ? writable(store) : new CacheStore(store);
  }

  /** A store open for writing, with the runtime hits that runs left in the cache directory counted first. */
  private static CacheStore writable(Store store) {
    CacheStore s = new CacheStore(store);
    PendingHits.ingest(store);
    return s;
  }

  /**
   * Takes the cache's writer lock without opening the database: the caller looks at the database's files with no
   * other writer in between, before it opens the database ({@link WriterLock#open}) and after it has closed it.
   * Waits and fails as {@link #open(Path, Mode, Duration, Consumer)} for writing does.
   */
  public static WriterLock lock(Path dir, Duration lockWait, Consumer<String> notices) throws InterruptedException {
    return new WriterLock(Store.lock(dir, lockWait, notices));
  }

  /** The writer lock of {@link #lock}, released by {@link #close}. */
  public static final class WriterLock implements AutoCloseable {
    private final Store.Held held;

    private WriterLock(Store.Held held) {
      this.held = held;
    }

    /** Opens the cache for writing under this lock; closing the store leaves the lock held. */
    public CacheStore open() {
      return writable(held.open(Clock.systemUTC()));
    }

    @Override
    public void close() {
      held.close();
    }
  }

  /** The engine under this facade, for {@link CacheRepair} and tests. */
  Store store() {
    return store;
  }

  public Path directory() {
    return store.directory();
  }

  // ---------------------------------------------------------------- graphs

  /**
   * Stores a module read from a dump as a graph (pending until something compiles it). The module's
   * bytes are only asked for when the graph is new: for a mapped (large) file that is a second read.
   */
  public PutOutcome putGraph(LoadedModule module) {
    return putGraph(GraphEntry.of(module));
  }

  /**
   * Stores a graph, deduplicated by fingerprint: a graph already present only gets its last-seen
   * time and count updated.
   *
   * @param moduleBytes the serialized HloModuleProto
   * @param source where it came from, for the user (a file name)
   */
  public PutOutcome putGraph(GraphFingerprint fingerprint, String moduleName, byte[] moduleBytes, String source) {
    return putGraph(new GraphEntry(fingerprint, moduleName, () -> moduleBytes, source, Optional.empty()));
  }

  /**
   * Stores a graph, deduplicated by fingerprint, and its Neuron name when it has one, in one
   * transaction: a graph already present only gets its last-seen time and count updated (and the
   * name added, as {@link #addNeuronName} does). The module's bytes are asked for only when it is new.
   */
  public PutOutcome putGraph(GraphEntry entry) {
    return store.graphWrites().putGraph(entry);
  }

  /**
   * Remembers where a stored graph lives in a Neuron compile cache. A name at the same location
   * (version and MODULE directory) is replaced; the graph keeps all its other names.
   *
   * @return false when exactly this name was already recorded
   * @throws XlacException (bad input) when the graph is not stored
   */
  public boolean addNeuronName(GraphFingerprint fingerprint, NeuronName name) {
    return store.graphWrites().addNeuronName(fingerprint, name);
  }

  /** Makes the writes of the current operation durable (fsync of the write-ahead log). */
  public void sync() {
    store.syncWal();
  }

  public Optional<GraphInfo> graph(GraphFingerprint fingerprint) {
    return store.reads().graph(fingerprint);
  }

  /** The serialized HloModuleProto of a stored graph, checksum-verified; empty when absent or damaged (reported). */
  public Optional<byte[]> readGraph(GraphFingerprint fingerprint) {
    return store.reads().readGraph(fingerprint);
  }

  /** Every stored graph, in fingerprint order. */
  public List<GraphInfo> graphs() {
    return store.reads().graphs();
  }

  // ---------------------------------------------------------------- artifacts

  /**
   * Stores a compiled artifact (replacing a recorded failure for the same key), durably: the write
   * is fsynced before this returns. The graph must already be stored.
   */
  public void putArtifact(ArtifactKey key, byte[] bytes, CompileInfo info) {
    putArtifacts(List.of(new NewArtifact(key, bytes, info)));
  }

  /** One artifact for {@link #putArtifacts}. */
  public record NewArtifact(ArtifactKey key, byte[] bytes, CompileInfo info) {}

  /**
   * Stores several compiled artifacts in one atomic, fsynced batch: all of them or none. For a
   * scheduler that finishes many compiles at once; the graphs must already be stored.
   */
  public void putArtifacts(List<NewArtifact> artifacts) {
    store.artifactWrites().putArtifacts(
        artifacts.stream().map(a -> new ArtifactWrites.NewArtifact(a.key(), a.bytes(), a.info())).toList());
  }

  /**
   * Records that compiling {@code key} failed, with the driver's classification ({@code kind}),
   * a one-line message and the compiler's log. A failure never replaces a compiled artifact: then
   * nothing is recorded and this returns false.
   */
  public boolean recordFailure(ArtifactKey key, String kind, String message, String log) {
    return recordFailures(List.of(new NewFailure(key, kind, message, log))) == 1;
  }

  /**
   * Records several failed compiles (see {@link #recordFailure}) in one atomic, fsynced batch: for an
   * import that meets many at once. Returns how many were recorded; a failure whose key holds a
   * compiled artifact is not. The graphs must already be stored.
   */
  public int recordFailures(List<NewFailure> failures) {
    return store.artifactWrites().recordFailures(failures);
  }

  /**
   * The artifact for {@code key}, checksum-verified. An entry that is absent, failed, or whose
   * bytes are missing or fail their checksum is a miss (empty); damage is also reported.
   * Concurrent calls for one key share one load.
   */
  public Optional<Artifact> getArtifact(ArtifactKey key) {
    return store.reads().getArtifact(key);
  }

  /**
   * Streams one compiled artifact into {@code out}, a chunk at a time, checking it against its
   * SHA-256 as it goes: for copying artifacts of any size out of the cache (a Neuron layout). Not
   * counted as a hit or miss, not kept in memory. Returns false when there is no compiled artifact
   * or it is damaged (reported); then {@code out} may hold part of it, which the caller discards.
   */
  public boolean readArtifact(ArtifactKey key, OutputStream out) throws IOException {
    return store.reads().readArtifact(key, out);
  }

  /**
   * {@link #artifactInfo}, counted for {@code cache stat} as a compile run's lookup: a compiled
   * entry is a hit (its compile time saved), an absent or failed one a miss. A compiled entry is a
   * hit only when its bytes are all there, of the recorded length, and pass RocksDB's checksums; the
   * SHA-256 is not computed here (it is whenever the bytes are handed out). A damaged one is a miss,
   * empty as an absent one, counted as a damaged read and reported on one line.
   */
  public Optional<ArtifactInfo> lookup(ArtifactKey key) {
    return store.reads().lookup(key);
  }

  /** The metadata of one entry (compiled or failed), without reading its bytes. */
  public Optional<ArtifactInfo> artifactInfo(ArtifactKey key) {
    return store.reads().artifactInfo(key);
  }

  /** The graph's metadata and, per compiler, its entry and log; empty when the graph is not stored. */
  public Optional<GraphLog> log(GraphFingerprint fingerprint) {
    return store.reads().log(fingerprint);
  }

  /** The compiler's log of one entry; empty when the entry is absent or has no log. Only that entry's log is read. */
  public String log(ArtifactKey key) {
    return store.reads().log(key);
  }

  /** The graph's entries (compiled or failed), one per compiler, metadata only: no bytes or logs are read. */
  public List<ArtifactInfo> entries(GraphFingerprint fingerprint) {
    return store.reads().entries(fingerprint);
  }

  // ---------------------------------------------------------------- the runtime's recorded requests

  /**
   * Stores the runtime's recorded compile requests with their executables in one atomic, fsynced batch. A request
   * the cache holds already is kept as it was, not replaced ({@link RequestIngest#alreadyPresent()}); one that
   * {@link #requestProblem} refuses is named in {@link RequestIngest#rejected()} while the others go in.
   */
  public RequestIngest putRequests(List<RecordedRequest> requests) {
    return store.requestEntries().putRequests(requests);
  }

  /**
   * Why {@link #putRequests} would not take this request in (its key is not the key of its sections, it is too large
   * to store, its plugin SHA-256 is not one), or empty when it would.
   */
  public static Optional<String> requestProblem(RecordedRequest request) {
    return dev.xlac.cache.store.RequestEntries.problem(request);
  }

  /** Every stored request (runtime entry), in key order. */
  public List<RequestInfo> requests() {
    return store.requestEntries().requests();
  }

  /** One stored request's metadata, without reading its values; empty when the cache does not hold it. */
  public Optional<RequestInfo> requestInfo(RequestKey key) {
    return store.requestEntries().requestInfo(key);
  }

  /** A stored request with its executable, checksum-verified; empty when absent or damaged (reported). */
  public Optional<RecordedRequest> readRequest(RequestKey key) {
    return store.requestEntries().readRequest(key);
  }

  /**
   * A stored request without its executable (its {@code executable()} is empty), checked as {@link #readRequest}:
   * what compiling it for another plugin needs ({@code xlac parallel-compile --plugin}).
   */
  public Optional<RecordedRequest> readRequestWithoutExecutable(RequestKey key) {
    return store.requestEntries().readRequestWithoutExecutable(key);
  }

  /**
   * Streams a stored executable into {@code out}, a chunk at a time, verified at the end: false when it is absent
   * or damaged (reported), and then {@code out} may hold part of it, which the caller discards.
   */
  public boolean readExecutable(RequestKey key, OutputStream out) throws IOException {
    return store.requestEntries().readExecutable(key, out);
  }

  /**
   * Adds what {@code xlac run} reports: the hits of each request (its hit count and last access, so that LRU
   * pruning keeps what the runtime uses) and the runtime's usage counters (hits, compile time saved). Fsynced.
   */
  public void recordRequestHits(Map<RequestKey, Long> hits, Duration saved) {
    store.requestEntries().recordHits(hits, saved);
  }

  // ---------------------------------------------------------------- maintenance

  /** Rows for {@code cache ls}. */
  public List<ListRow> list(ListQuery query) {
    return new CacheListing(store).list(query);
  }

  /** Figures for {@code cache stat}. */
  public CacheStatistics statistics() {
    return CacheListing.statistics(store);
  }

  /** Sets the usage counters (hits, misses, time saved, cleanups) to zero. */
  public void zeroStatistics() {
    store.zeroStatistics();
  }

  public OptionalLong maxSize() {
    return store.maxSize();
  }

  /** Sets (or with an empty value, removes) the size limit enforced after every write. */
  public void setMaxSize(OptionalLong bytes) {
    store.setMaxSize(bytes);
  }

  /**
   * Removes entries as the request says; see {@link PruneRequest}. The prune holds the write lock
   * from its plan to its last removal, so it removes exactly what it planned.
   */
  public PruneResult prune(PruneRequest request) {
    return PruneByLastAccess.run(store, request);
  }

  /**
   * Pins what a compile run uses until the returned {@link RunPins} is closed: the automatic size
   * limit never removes a graph this store stores or looks up, nor an artifact it stores, records a
   * failure for or finds, meanwhile. Closing it enforces the limit at once. One run at a time.
   */
  public RunPins pinForRun() {
    return new RunPins(store.pinForRun());
  }

  /** Removes graphs and all their artifacts; returns the bytes freed. Unknown fingerprints are ignored. */
  public long remove(List<GraphFingerprint> fingerprints) {
    return store.remove(fingerprints);
  }

  /**
   * Removes every graph and artifact, keeping the settings (every {@code config/} record: max-size,
   * require-signed, trusted keys) and the usage counters; returns the stored bytes removed. It swaps
   * in a fresh database rather than deleting records, so it needs no free space to speak of and
   * works on a full disk; a crash leaves the old cache or the cleared one.
   */
  public long clear() {
    return store.clear();
  }

  /**
   * Checks every checksum and index record, and the permissions of its directories and runtime files; with
   * {@code repair}, drops what is damaged and takes others' write permission away.
   */
  public VerifyReport verify(boolean repair) {
    VerifyReport r = CacheVerifier.run(store, repair);
    return r.plus(repair ? CacheModes.repair(directory()) : CacheModes.check(directory()));
  }

  /**
   * Starts, on a daemon thread, the one-time set-up that reading or writing a bundle's tar needs (see
   * {@link dev.xlac.cache.bundle.TarWarmUp}), for an import or export to call before it opens the cache.
   */
  public static void warmUpBundles() {
    dev.xlac.cache.bundle.TarWarmUp.start();
  }

  /**
   * Writes a bundle of the selected entries to {@code file}; see {@link BundleExporter}. First removes what
   * earlier exports to {@code file} that were killed left beside it (see {@link SiblingTemporaries}).
   */
  public ExportResult exportBundle(Path file, ExportRequest request) {
    for (SiblingTemporaries.Removed r : SiblingTemporaries.removeStale(file)) {
      store.notice("removed " + r.file() + " (" + Sizes.human(r.bytes()) + "), left by an export that did not finish");
    }
    return new BundleExporter(store).export(file, request);
  }

  /** Merges a bundle into this cache, after validating all of it; see {@link BundleImporter}. */
  public ImportResult importBundle(Path file) {
    return importBundle(file, ImportRequest.defaults());
  }

  /**
   * As {@link #importBundle(Path)}, with the request's trusted keys besides the cache's {@link #trustSettings()},
   * and its limit on unpacked bytes, if it has one, instead of the cache's {@link #importMaxUnpacked()}.
   */
  public ImportResult importBundle(Path file, ImportRequest request) {
    store.requireWritable();
    BundleImporter.Trust trust = new BundleImporter.Trust(trustSettings(), request);
    ImportLimit limit = request.maxUnpacked() != null ? request.maxUnpacked() : importMaxUnpacked();
    ImportResult r = new BundleImporter(store, BundleLimits.DEFAULT, trust, limit, () -> { }).importBundle(file);
    store.invalidateMemory();
    store.enforceMaxSize();
    return r;
  }

  /** The most bytes a bundle may unpack to on import ({@code cache config import-max-unpacked}); see {@link ImportLimit}. */
  public ImportLimit importMaxUnpacked() {
    return ImportLimit.read(store);
  }

  /** Sets {@link #importMaxUnpacked()}: a {@link ImportLimit#setting}, or {@link ImportLimit#defaults()} to remove it. */
  public void setImportMaxUnpacked(ImportLimit limit) {
    store.requireWritable();
    ImportLimit.write(store, limit);
  }

  /** The shared S3 tier this cache reads through to and writes through to ({@code cache config remote}); empty: none. */
  public Optional<RemoteSetting> remoteSetting() {
    return RemoteSetting.read(store);
  }

  /** Sets ({@code cache config remote s3://...}) or, with an empty value, removes the remote tier. */
  public void setRemoteSetting(Optional<RemoteSetting> setting) {
    store.requireWritable();
    RemoteSetting.write(store, setting);
  }

  /** Which bundle signers this cache trusts, and whether it imports only signed bundles; see {@link TrustConfig}. */
  public TrustSettings trustSettings() {
    return TrustConfig.read(store);
  }

  /** {@code cache config require-signed on|off}. */
  public void setRequireSigned(boolean on) {
    store.requireWritable();
    TrustConfig.setRequireSigned(store, on);
  }

  /** {@code cache config trust add PUBKEY}; false when the key is trusted already. */
  public boolean trustKey(BundleKey key, String label) {
    store.requireWritable();
    return TrustConfig.add(store, key, label);
  }

  /**
   * {@code cache config trust remove KEYID}: the key with this id or unique prefix (8 or more hex
   * digits). Null when its record was damaged (it is removed all the same).
   */
  public TrustSettings.TrustedKey untrustKey(String keyIdOrPrefix) {
    store.requireWritable();
    return TrustConfig.remove(store, keyIdOrPrefix);
  }

  /** Finds the stored graph a user means: a full fingerprint or a unique prefix of at least 6 hex digits. */
  public GraphFingerprint resolve(String text) {
    return GraphResolver.resolve(store, text);
  }

  /**
   * Whether {@link #close} could not remove every entry of a removed request from the cache's own runtime layout
   * (each failure reported as a notice): the layout then serves what the cache no longer holds, and whoever closed
   * the store must not mark it current. False before the close.
   */
  public boolean runtimeLayoutHoldsRemoved() {
    return runtimeLayoutHoldsRemoved;
  }

  /**
   * Removes from the cache's own runtime layout the entry files of requests it no longer holds (after a clear, a
   * prune or a repair); the number removed, each failure told to {@code problems}.
   */
  int removeUnheldFromRuntimeLayout(Consumer<String> problems) {
    return LayoutEntryFiles.removeUnheld(LayoutEntryFiles.managedDir(store.dir), () -> {
      Set<String> held = new HashSet<>();
      for (RequestInfo r : requests()) {
        held.add(r.key().hex());
      }
      return held;
    }, problems);
  }

  /**
   * Saves the usage counters, then closes the database and releases the lock; a second close does nothing. A
   * store that removed runtime requests first removes their entries from the cache's own runtime layout
   * ({@link LayoutEntryFiles#managedDir}), so that no run, not even one running now, is served what the cache
   * no longer holds, and their space is freed.
   */
  @Override
  public void close() {
    try {
      if (!closed && store.requestsRemoved()) {
        removeUnheldFromRuntimeLayout(m -> {
          runtimeLayoutHoldsRemoved = true;
          store.notices().accept(m);
        });
      }
    } catch (RuntimeException e) {
      runtimeLayoutHoldsRemoved = true;
      store.notices().accept("cannot remove the removed entries from the runtime layout: " + XlacException.reason(e));
    } finally {
      closed = true;
      store.close();
    }
  }
}
