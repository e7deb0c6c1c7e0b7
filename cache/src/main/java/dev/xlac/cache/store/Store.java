package dev.xlac.cache;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.luben.zstd.Zstd;
import dev.xlac.cache.Records.ArtifactRecord;
import dev.xlac.cache.Records.GraphRecord;
import dev.xlac.cache.RocksDbStore.Cf;
import dev.xlac.cache.RocksDbStore.Cursor;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.Sizes;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.SiblingTemporaries;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.LoadedModule;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.rocksdb.WriteBatch;

/**
 * xlac's persistent compilation cache: graphs (fingerprint to HLO module) and the artifacts
 * compiled from them (graph fingerprint + compiler identity to bytes), in RocksDB.
 *
 * <p>Invariants (see cache/README.md): every update that touches several records is one atomic
 * WriteBatch, which also rewrites the running totals; every artifact record refers to a stored
 * graph; every value carries a SHA-256 checked on each read, and a value that is missing or fails
 * it is a miss, never returned, and reported; one process writes at a time (the lock names it),
 * while any number read through RocksDB read-only instances. Value I/O (whole or chunked values,
 * streaming, the checksum-only probe of lookups) lives in {@link StoredValues}.
 *
 * <p>Lookups go through an in-process Caffeine cache: concurrent requests for one key share one
 * load, and a failed load is not kept.
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
   * to graph records (graph_meta format 2); version 3 stores values larger than 8 MiB in chunks
   * ({@link StoredValues}). Every record of an older version is valid in the newer one, so an older
   * cache is read as it is and upgraded by rewriting the version when opened for writing.
   */
  public static final int SCHEMA_VERSION = 3;
  /** The oldest schema version this build reads (and upgrades). */
  static final int OLDEST_READABLE_SCHEMA = 1;
  static final byte[] SCHEMA_KEY = "schema_version".getBytes(StandardCharsets.US_ASCII);
  static final byte[] TOTALS_KEY = "totals".getBytes(StandardCharsets.US_ASCII);
  static final byte[] MAX_SIZE_KEY = "config/max_size".getBytes(StandardCharsets.US_ASCII);
  /** Every setting of the cache lives under this prefix of the meta family; {@link #clear} keeps them. */
  static final byte[] CONFIG_PREFIX = "config/".getBytes(StandardCharsets.US_ASCII);
  /** Last-access times are rewritten at most this often per entry (ccache-style approximate LRU). */
  static final long TOUCH_INTERVAL_MILLIS = 60_000;
  /** An automatic cleanup trims to this fraction of the configured maximum, so it does not run on every write. */
  static final double CLEANUP_TARGET = 0.9;
  private static final long MEMORY_CACHE_BYTES = 256L << 20;
  private static final int ZSTD_LEVEL = 3;
  /** The largest value handed out as one array (a little under 2 GiB, as the JDK's own arrays allow). */
  static final long MAX_ARRAY_BYTES = Integer.MAX_VALUE - 8;
  private static final System.Logger LOG = System.getLogger(CacheStore.class.getName());

  final Path dir;
  private final Mode mode;
  private final CacheLock lock;
  final RocksDbStore db;
  final StoredValues values;
  final Clock clock;
  private final Consumer<String> notices;
  /** Held by every batch, and by a prune from its plan to its last removal (see {@link #prune}). */
  final ReentrantLock writeLock = new ReentrantLock();
  private volatile Totals totals;
  /** The schema version on disk (a read-only store of an older cache keeps reading it; 0: no cache yet). */
  private int schemaVersion = SCHEMA_VERSION;
  private volatile OptionalLong maxSize;
  private final AtomicLong pendingHits = new AtomicLong();
  private final AtomicLong pendingMisses = new AtomicLong();
  private final AtomicLong pendingSavedMillis = new AtomicLong();
  private final AtomicLong pendingDamaged = new AtomicLong();
  private final Cache<ArtifactKey, Remembered> memory;
  private final ConcurrentHashMap<ArtifactKey, CompletableFuture<Artifact>> inFlight = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, CompilerIdentity> identities = new ConcurrentHashMap<>();
  private final AtomicReference<RunPins> runPins = new AtomicReference<>();
  /** Tests only: runs before each load from the database (see SingleFlightTest). */
  volatile Consumer<ArtifactKey> beforeLoad = k -> { };
  private boolean closed;

  private CacheStore(Path dir, Mode mode, CacheLock lock, RocksDbStore db, Clock clock, Consumer<String> notices) {
    this.dir = dir;
    this.mode = mode;
    this.lock = lock;
    this.db = db;
    this.values = new StoredValues(db);
    this.clock = clock;
    this.notices = notices;
    this.memory = Caffeine.newBuilder().maximumWeight(MEMORY_CACHE_BYTES)
        .weigher((ArtifactKey k, Remembered r) -> r.artifact().bytes().length + 64).executor(Runnable::run).build();
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
   */
  public static CacheStore open(Path dir, Mode mode, Duration lockWait, Consumer<String> notices)
      throws InterruptedException {
    return open(dir, mode, lockWait, notices, Clock.systemUTC());
  }

  static CacheStore open(Path dir, Mode mode, Duration lockWait, Consumer<String> notices, Clock clock)
      throws InterruptedException {
    Path abs = dir.toAbsolutePath().normalize();
    if (mode == Mode.READ_ONLY) {
      RocksDbStore db = RocksDbStore.open(abs, false);
      return init(new CacheStore(abs, mode, null, db, clock, notices));
    }
    CacheLock lock = CacheLock.acquire(abs, lockWait, notices);
    RocksDbStore db;
    try {
      DatabaseSwap.recover(abs, notices); // a repair a crash interrupted: finished or undone
      db = RocksDbStore.open(abs, true);
    } catch (RuntimeException e) {
      lock.close();
      throw e;
    }
    return init(new CacheStore(abs, mode, lock, db, clock, notices));
  }

  /** For {@link CacheRepair}: opens {@code abs} for writing under the writer lock the caller holds (and keeps). */
  static CacheStore openLocked(Path abs, Consumer<String> notices, Clock clock) {
    return init(new CacheStore(abs, Mode.READ_WRITE, null, RocksDbStore.open(abs, true), clock, notices));
  }

  /**
   * For {@link CacheSalvage}: a new cache in a repair's private rebuild directory, written under the
   * real cache's lock, and without a disk reserve of its own (the rebuild needs that space).
   */
  static CacheStore openRebuild(Path rebuildDir, Consumer<String> notices, Clock clock) {
    Path abs = rebuildDir.toAbsolutePath().normalize();
    return init(new CacheStore(abs, Mode.READ_WRITE, null, RocksDbStore.open(abs, true), clock, notices), false);
  }

  private static CacheStore init(CacheStore s) {
    return init(s, true);
  }

  private static CacheStore init(CacheStore s, boolean reserve) {
    try {
      s.checkSchema();
      if (s.mode == Mode.READ_WRITE) {
        s.db.onReopen(s::reread);
        s.values.removeLeftovers(); // chunks of values whose writer was killed
        if (reserve) {
          s.db.ensureReserve(s.notices);
        }
      }
      return s;
    } catch (RuntimeException e) {
      s.closeHandles();
      throw e;
    }
  }

  private void checkSchema() {
    byte[] v = db.get(Cf.META, SCHEMA_KEY);
    if (v == null && mode == Mode.READ_ONLY && !anyKey(Cf.GRAPH_META) && !anyKey(Cf.ARTIFACT_META)) {
      // No database yet, or one whose first writer has not committed its first batch: an empty cache.
      schemaVersion = 0;
      totals = new Totals();
      maxSize = OptionalLong.empty();
      return;
    }
    if (v == null) {
      if (mode != Mode.READ_WRITE || anyKey(Cf.GRAPH_META) || anyKey(Cf.ARTIFACT_META)) {
        throw new XlacException(ExitCode.ENVIRONMENT, "cache " + dir + " has no schema version; it is not an xlac cache");
      }
      Totals t = new Totals();
      t.countersSince = clock.millis();
      try (WriteBatch b = new WriteBatch()) {
        db.put(b, Cf.META, SCHEMA_KEY, Integer.toString(SCHEMA_VERSION).getBytes(StandardCharsets.US_ASCII));
        db.put(b, Cf.META, TOTALS_KEY, Records.encode(t));
        db.write(b, true);
      }
      v = db.get(Cf.META, SCHEMA_KEY);
    }
    int version;
    try {
      version = Integer.parseInt(new String(v, StandardCharsets.US_ASCII).strip());
    } catch (NumberFormatException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cache " + dir + " has an unreadable schema version; it is not an xlac cache");
    }
    if (version > SCHEMA_VERSION) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cache " + dir + " uses schema version " + version
          + ", written by a newer xlac; this xlac understands version " + SCHEMA_VERSION
          + " (upgrade xlac, or use another --cache directory)");
    }
    if (version < OLDEST_READABLE_SCHEMA) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cache " + dir + " uses schema version " + version
          + ", which this xlac cannot read (it reads versions " + OLDEST_READABLE_SCHEMA + " to " + SCHEMA_VERSION
          + "); use another --cache directory");
    }
    schemaVersion = version;
    if (version < SCHEMA_VERSION && mode == Mode.READ_WRITE) {
      try (WriteBatch b = new WriteBatch()) {
        db.put(b, Cf.META, SCHEMA_KEY, Integer.toString(SCHEMA_VERSION).getBytes(StandardCharsets.US_ASCII));
        db.write(b, true);
      }
      LOG.log(System.Logger.Level.INFO, "cache " + dir + " upgraded from schema version " + version + " to "
          + SCHEMA_VERSION);
      schemaVersion = SCHEMA_VERSION;
    }
    byte[] t = db.get(Cf.META, TOTALS_KEY);
    totals = t == null ? new Totals() : Records.decodeTotals(t);
    byte[] m = db.get(Cf.META, MAX_SIZE_KEY);
    maxSize = m == null ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(new String(m, StandardCharsets.US_ASCII)));
  }

  /**
   * After the database was reopened (a full disk) or replaced ({@link #clear}): what this store
   * remembers of it is read again. Unlogged batches that were not flushed are gone with the old
   * instance, so the totals they wrote are too.
   */
  private void reread() {
    writeLock.lock();
    try {
      byte[] t = db.get(Cf.META, TOTALS_KEY);
      totals = t == null ? new Totals() : Records.decodeTotals(t);
      byte[] m = db.get(Cf.META, MAX_SIZE_KEY);
      maxSize = m == null ? OptionalLong.empty()
          : OptionalLong.of(Long.parseLong(new String(m, StandardCharsets.US_ASCII)));
    } catch (RuntimeException e) {
      // keep what we had: the next write fails the same way, and says why
    } finally {
      writeLock.unlock();
    }
    memory.invalidateAll();
    identities.clear();
  }

  private boolean anyKey(Cf cf) {
    try (Cursor c = db.cursor(cf, null)) {
      return c.valid();
    }
  }

  int schemaVersion() {
    return schemaVersion;
  }

  public Path directory() {
    return dir;
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
   * As {@link #putGraph(GraphFingerprint, String, byte[], String)}, with the serialized
   * HloModuleProto only produced (at most once) when the graph is not stored yet.
   */
  public PutOutcome putGraph(GraphFingerprint fingerprint, String moduleName, Supplier<byte[]> moduleBytesIfNew,
      String source) {
    return putGraph(new GraphEntry(fingerprint, moduleName, moduleBytesIfNew, source, Optional.empty()));
  }

  /**
   * Stores a graph, deduplicated by fingerprint, and its Neuron name when it has one, in one
   * transaction: a graph already present only gets its last-seen time and count updated (and the
   * name added, see {@link #addNeuronName}). The module's bytes are asked for only when it is new.
   */
  public PutOutcome putGraph(GraphEntry entry) {
    requireWritable();
    byte[] fp = entry.fingerprint().digest();
    pinGraph(fp);
    long now = clock.millis();
    if (readGraphRecord(fp) != null) { // the common case: no need to compress it
      PutOutcome seen = commit(false, txn -> markSeen(txn, fp, now, entry));
      if (seen != null) {
        return seen;
      }
      // removed meanwhile: store it below
    }
    byte[] moduleBytes = entry.bytesIfNew().get();
    byte[] stored = Zstd.compress(moduleBytes, ZSTD_LEVEL);
    GraphRecord plain = new GraphRecord(entry.moduleName(), entry.source(), now, now, 1, moduleBytes.length,
        stored.length, Checksums.sha256(stored), now, List.of());
    GraphRecord rec = entry.neuronName().map(plain::withNeuronName).orElse(plain);
    PutOutcome outcome;
    if (StoredValues.chunked(stored.length)) {
      // Chunk by chunk, each its own batch; the claim on the key keeps a second thread storing the
      // same graph from writing chunks under it, and it finds the graph stored when it gets the claim.
      try (StoredValues.ValueWriter w = values.writer(Cf.GRAPHS, fp, stored.length, true)) {
        boolean fresh = readGraphRecord(fp) == null;
        if (fresh) {
          w.write(stored);
        }
        outcome = commit(false, txn -> {
          PutOutcome seen = markSeen(txn, fp, now, entry);
          if (seen != null || !fresh) {
            return seen;
          }
          txn.writeGraph(fp, rec, null);
          txn.commitValue(w);
          return PutOutcome.ADDED;
        });
      }
      if (outcome == null) { // stored by another thread, then removed, meanwhile: store it now
        return putGraph(new GraphEntry(entry.fingerprint(), entry.moduleName(), () -> moduleBytes, entry.source(),
            entry.neuronName()));
      }
    } else {
      outcome = commit(false, txn -> {
        PutOutcome seen = markSeen(txn, fp, now, entry);
        if (seen != null) {
          return seen;
        }
        txn.writeGraph(fp, rec, stored);
        return PutOutcome.ADDED;
      });
    }
    enforceMaxSize();
    return outcome;
  }

  /**
   * Counts one more sighting of a stored graph (adding the entry's Neuron name); null (nothing
   * written) when it is not stored.
   */
  private static PutOutcome markSeen(Txn txn, byte[] fp, long now, GraphEntry entry) {
    GraphRecord old = txn.graph(fp);
    if (old == null) {
      return null;
    }
    GraphRecord seen = old.seenAgain(now);
    if (entry.neuronName().isPresent() && !seen.neuronNames().contains(entry.neuronName().get())) {
      seen = seen.withNeuronName(entry.neuronName().get());
    }
    txn.writeGraph(fp, seen, null);
    return PutOutcome.ALREADY_PRESENT;
  }

  /** Makes the writes of the current operation durable (fsync of the write-ahead log). */
  public void sync() {
    db.syncWal();
  }

  public Optional<GraphInfo> graph(GraphFingerprint fingerprint) {
    byte[] fp = fingerprint.digest();
    GraphRecord r = readGraphRecord(fp);
    return r == null ? Optional.empty() : Optional.of(GraphInfo.of(fp, r));
  }

  /** The serialized HloModuleProto of a stored graph, checksum-verified; empty when absent or damaged (reported). */
  public Optional<byte[]> readGraph(GraphFingerprint fingerprint) {
    byte[] fp = fingerprint.digest();
    GraphRecord r = readGraphRecord(fp);
    if (r == null) {
      return Optional.empty();
    }
    String damage;
    try {
      switch (CheckedValue.read(values, Cf.GRAPHS, fp, r.storedBytes(), r.storedSha256())) {
        case CheckedValue.Ok(byte[] stored) -> {
          return Optional.of(Zstd.decompress(stored, Math.toIntExact(r.rawBytes())));
        }
        case CheckedValue.Gone() -> {
          return Optional.empty(); // removed by a writer since this reader opened
        }
        case CheckedValue.Missing() -> damage = "its module is missing";
        case CheckedValue.Mismatch() -> damage = "its module fails its checksum";
        case CheckedValue.Corrupt(String detail) -> damage = "RocksDB reports it corrupt (" + detail + ")";
      }
    } catch (RuntimeException e) {
      damage = "its module does not decompress (" + e.getMessage() + ")";
    }
    reportDamage("graph " + fingerprint.shortForm() + " (" + r.moduleName() + ")", damage);
    return Optional.empty();
  }

  /** Every stored graph, in fingerprint order. */
  public List<GraphInfo> graphs() {
    List<GraphInfo> out = new ArrayList<>();
    try (Cursor g = db.cursor(Cf.GRAPH_META, null)) {
      for (; g.valid(); g.next()) {
        out.add(GraphInfo.of(g.key(), Records.decodeGraph(g.value())));
      }
    }
    return out;
  }

  /**
   * Remembers where a stored graph lives in a Neuron compile cache. A name at the same location
   * (version and MODULE directory) is replaced; the graph keeps all its other names.
   *
   * @return false when exactly this name was already recorded
   * @throws XlacException (bad input) when the graph is not stored
   */
  public boolean addNeuronName(GraphFingerprint fingerprint, NeuronName name) {
    byte[] fp = fingerprint.digest();
    return commit(false, txn -> {
      GraphRecord g = txn.graph(fp);
      if (g == null) {
        throw XlacException.badInput("graph " + fingerprint + " is not in cache " + dir
            + "; store the graph before its Neuron name");
      }
      if (g.neuronNames().contains(name)) {
        return false;
      }
      txn.writeGraph(fp, g.withNeuronName(name), null);
      return true;
    });
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
    if (artifacts.stream().map(NewArtifact::key).distinct().count() < artifacts.size()) {
      java.util.Map<ArtifactKey, NewArtifact> last = new java.util.LinkedHashMap<>();
      artifacts.forEach(a -> last.put(a.key(), a)); // one batch: the last one of a key is what it would leave
      artifacts = List.copyOf(last.values());
    }
    storeArtifacts(artifacts);
    artifacts.forEach(a -> memory.invalidate(a.key()));
  }

  private void storeArtifacts(List<NewArtifact> artifacts) {
    requireWritable();
    long now = clock.millis();
    List<ArtifactRecord> records = new ArrayList<>(artifacts.size());
    List<byte[]> logs = new ArrayList<>(artifacts.size());
    for (NewArtifact a : artifacts) {
      pinArtifact(a.key());
      byte[] log = a.info().log().getBytes(StandardCharsets.UTF_8);
      byte[] storedLog = log.length == 0 ? null : Zstd.compress(log, ZSTD_LEVEL);
      logs.add(storedLog);
      records.add(new ArtifactRecord(EntryStatus.COMPILED, a.bytes().length, Checksums.sha256(a.bytes()),
          a.info().compileTime().toMillis(), now, now, null, null, log.length, storedLog == null ? 0 : storedLog.length,
          storedLog == null ? null : Checksums.sha256(storedLog)));
    }
    // Large artifacts go out chunk by chunk before the batch that writes their records.
    List<StoredValues.ValueWriter> writers = new ArrayList<>();
    try {
      for (NewArtifact a : artifacts) {
        writers.add(StoredValues.chunked(a.bytes().length) ? chunkedArtifact(a.key().bytes(), a.bytes()) : null);
      }
      commit(true, txn -> {
        for (int i = 0; i < artifacts.size(); i++) {
          NewArtifact a = artifacts.get(i);
          txn.requireGraph(a.key());
          txn.putIdentity(a.key().compiler());
          StoredValues.ValueWriter w = writers.get(i);
          txn.writeArtifact(a.key().bytes(), records.get(i), w == null ? a.bytes() : null, logs.get(i));
          if (w != null) {
            txn.commitValue(w);
          }
        }
        return null;
      });
    } finally {
      writers.stream().filter(java.util.Objects::nonNull).forEach(StoredValues.ValueWriter::close);
    }
    enforceMaxSize();
  }

  /**
   * Writes a large artifact's chunks. An entry under the key whose value is chunked too is removed
   * first: its readers would otherwise meet the new chunks under their old record (it is a miss
   * until the new record is written).
   */
  private StoredValues.ValueWriter chunkedArtifact(byte[] key, byte[] bytes) {
    StoredValues.ValueWriter w = values.writer(Cf.ARTIFACTS, key, bytes.length, true);
    try {
      ArtifactRecord old = readArtifactRecord(key);
      if (old != null && old.status() == EntryStatus.COMPILED && StoredValues.chunked(old.bytes())) {
        commit(false, txn -> txn.removeArtifact(key));
      }
      w.write(bytes);
      return w;
    } catch (RuntimeException e) {
      w.close();
      throw e;
    }
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
    requireWritable();
    long now = clock.millis();
    List<ArtifactRecord> records = new ArrayList<>(failures.size());
    List<byte[]> logs = new ArrayList<>(failures.size());
    for (NewFailure f : failures) {
      byte[] logBytes = f.log() == null ? new byte[0] : f.log().getBytes(StandardCharsets.UTF_8);
      byte[] storedLog = logBytes.length == 0 ? null : Zstd.compress(logBytes, ZSTD_LEVEL);
      logs.add(storedLog);
      records.add(new ArtifactRecord(EntryStatus.FAILED, 0, null, 0, now, now, f.kind() == null ? "error" : f.kind(),
          f.message() == null ? "" : f.message(), logBytes.length, storedLog == null ? 0 : storedLog.length,
          storedLog == null ? null : Checksums.sha256(storedLog)));
      pinArtifact(f.key());
    }
    int recorded = commit(true, txn -> {
      int n = 0;
      for (int i = 0; i < failures.size(); i++) {
        ArtifactKey key = failures.get(i).key();
        byte[] kb = key.bytes();
        txn.requireGraph(key);
        ArtifactRecord old = txn.artifact(kb);
        if (old != null && old.status() == EntryStatus.COMPILED) {
          continue;
        }
        txn.putIdentity(key.compiler());
        txn.writeArtifact(kb, records.get(i), null, logs.get(i));
        n++;
      }
      return n;
    });
    enforceMaxSize();
    return recorded;
  }

  /**
   * The artifact for {@code key}, checksum-verified. An entry that is absent, failed, or whose
   * bytes are missing or fail their checksum is a miss (empty); damage is also reported.
   * Concurrent calls for one key share one load.
   */
  public Optional<Artifact> getArtifact(ArtifactKey key) {
    pinArtifact(key);
    Artifact a = singleFlight(key);
    count(a);
    return Optional.ofNullable(a);
  }

  /**
   * One load per key at a time: the first caller reads the artifact, later ones wait for its
   * outcome. Loaded artifacts stay in the weighted Caffeine cache; misses and failed loads are never
   * kept (a caller that shared a failed load looks again).
   */
  private Artifact singleFlight(ArtifactKey key) {
    while (true) {
      Remembered cached = memory.getIfPresent(key);
      if (cached != null) {
        long now = clock.millis();
        long last = cached.touched().get();
        if (now - last >= TOUCH_INTERVAL_MILLIS && cached.touched().compareAndSet(last, now)) {
          byte[] kb = key.bytes();
          ArtifactRecord rec = readArtifactRecord(kb);
          if (rec != null) {
            touch(key, kb, rec);
          }
        }
        return cached.artifact();
      }
      CompletableFuture<Artifact> mine = new CompletableFuture<>();
      CompletableFuture<Artifact> existing = inFlight.putIfAbsent(key, mine);
      if (existing != null) {
        try {
          return existing.join();
        } catch (CompletionException e) {
          continue; // someone else's load failed; look again
        }
      }
      try {
        beforeLoad.accept(key);
        Artifact a = load(key);
        if (a != null) {
          memory.put(key, new Remembered(a, new AtomicLong(clock.millis())));
        }
        inFlight.remove(key, mine);
        mine.complete(a);
        return a;
      } catch (Throwable t) {
        inFlight.remove(key, mine);
        mine.completeExceptionally(t);
        throw unwrap(new CompletionException(t));
      }
    }
  }

  /** An artifact kept in memory, and when its last access was last written to the database. */
  private record Remembered(Artifact artifact, AtomicLong touched) {}

  private static RuntimeException unwrap(CompletionException e) {
    Throwable c = e.getCause();
    if (c instanceof RuntimeException r) {
      return r;
    }
    if (c instanceof Error err) {
      throw err;
    }
    return e;
  }

  private void count(Artifact a) {
    count(a != null, a == null ? 0 : a.compileTime().toMillis());
  }

  private void count(boolean hit, long savedMillis) {
    if (hit) {
      pendingHits.incrementAndGet();
      pendingSavedMillis.addAndGet(savedMillis);
    } else {
      pendingMisses.incrementAndGet();
    }
  }

  /** Reads and verifies one artifact from the database; null on a miss (damage is reported). */
  private Artifact load(ArtifactKey key) {
    byte[] kb = key.bytes();
    ArtifactRecord rec = readArtifactRecord(kb);
    if (rec == null || rec.status() != EntryStatus.COMPILED) {
      return null;
    }
    if (rec.bytes() > MAX_ARRAY_BYTES) {
      throw XlacException.badInput("artifact " + key + " in cache " + dir + " is " + rec.bytes()
          + " bytes, more than one array can hold (" + MAX_ARRAY_BYTES + "); read it as a stream (export or materialize)");
    }
    CheckedValue read = CheckedValue.read(values, Cf.ARTIFACTS, kb, rec.bytes(), rec.sha256());
    if (read instanceof CheckedValue.Ok(byte[] bytes)) {
      touch(key, kb, rec);
      return new Artifact(key, bytes, Duration.ofMillis(rec.compileMillis()), Instant.ofEpochMilli(rec.created()));
    }
    artifactDamage(key, read, "fail their checksum", "treated as a miss (run 'xlac cache verify --repair')");
    return null;
  }

  /**
   * Counts and reports (one line) an artifact read that found damage; nothing for {@link CheckedValue.Gone},
   * a plain miss. {@code mismatch} words a {@link CheckedValue.Mismatch}; {@code then} says what happens now.
   */
  private void artifactDamage(ArtifactKey key, CheckedValue outcome, String mismatch, String then) {
    String damage = switch (outcome) {
      case CheckedValue.Ok ok -> null;
      case CheckedValue.Gone gone -> null;
      case CheckedValue.Missing() -> "its bytes are missing";
      case CheckedValue.Mismatch() -> "its bytes " + mismatch;
      case CheckedValue.Corrupt(String detail) -> "RocksDB reports it corrupt (" + detail + ")";
    };
    if (damage != null) {
      pendingDamaged.incrementAndGet();
      notices.accept("cache " + dir + ": artifact " + key + " is damaged: " + damage + "; " + then);
    }
  }

  /**
   * Streams one compiled artifact into {@code out}, a chunk at a time, checking it against its
   * SHA-256 as it goes: for copying artifacts of any size out of the cache (a Neuron layout). Not
   * counted as a hit or miss, not kept in memory. Returns false when there is no compiled artifact
   * or it is damaged (reported); then {@code out} may hold part of it, which the caller discards.
   */
  public boolean readArtifact(ArtifactKey key, java.io.OutputStream out) throws java.io.IOException {
    byte[] kb = key.bytes();
    ArtifactRecord rec = readArtifactRecord(kb);
    if (rec == null || rec.status() != EntryStatus.COMPILED) {
      return false;
    }
    CheckedValue read = CheckedValue.stream(values, Cf.ARTIFACTS, kb, rec.bytes(), rec.sha256(), out);
    artifactDamage(key, read, "fail their checksum", "treated as a miss (run 'xlac cache verify --repair')");
    return read instanceof CheckedValue.Ok;
  }

  private void touch(ArtifactKey key, byte[] kb, ArtifactRecord rec) {
    long now = clock.millis();
    if (mode != Mode.READ_WRITE || now - rec.lastAccess() < TOUCH_INTERVAL_MILLIS) {
      return;
    }
    try {
      commit(false, txn -> {
        ArtifactRecord cur = txn.artifact(kb);
        if (cur != null && cur.status() == EntryStatus.COMPILED) {
          txn.writeArtifact(kb, cur.withLastAccess(now), null, null);
        }
        return null;
      });
    } catch (XlacException e) {
      notices.accept("cannot record the access to " + key + ": " + e.getMessage());
    }
  }

  /**
   * {@link #artifactInfo}, counted for {@code cache stat} as a compile run's lookup: a compiled
   * entry is a hit (its compile time saved), an absent or failed one a miss. A compiled entry is a
   * hit only when its bytes are all there, of the recorded length, and pass RocksDB's checksums
   * (CRC32C of the blocks or blob records that hold them; {@link CheckedValue#probe}); the SHA-256 is
   * not computed here (it is whenever the bytes are handed out). A damaged one is a miss, empty as an
   * absent one, counted as a damaged read and reported on one line: the compile run compiles it again.
   */
  public Optional<ArtifactInfo> lookup(ArtifactKey key) {
    byte[] kb = key.bytes();
    pinArtifact(kb);
    ArtifactRecord r = readArtifactRecord(kb);
    if (r == null || r.status() != EntryStatus.COMPILED) {
      count(false, 0);
      return r == null ? Optional.empty() : Optional.of(ArtifactInfo.of(key, r));
    }
    CheckedValue probe = CheckedValue.probe(values, Cf.ARTIFACTS, kb, r.bytes(), r.sha256());
    boolean hit = probe instanceof CheckedValue.Ok;
    count(hit, hit ? r.compileMillis() : 0);
    artifactDamage(key, probe, "are not of the recorded length", "treated as a miss, so it is compiled again");
    if (hit) {
      touch(key, kb, r); // a run that finds it cached uses it: least recently used order must say so
    }
    return hit ? Optional.of(ArtifactInfo.of(key, r)) : Optional.empty();
  }

  /** The metadata of one entry (compiled or failed), without reading its bytes. */
  public Optional<ArtifactInfo> artifactInfo(ArtifactKey key) {
    ArtifactRecord r = readArtifactRecord(key.bytes());
    return r == null ? Optional.empty() : Optional.of(ArtifactInfo.of(key, r));
  }

  /** The graph's metadata and, per compiler, its entry and log; empty when the graph is not stored. */
  public Optional<GraphLog> log(GraphFingerprint fingerprint) {
    Optional<GraphInfo> g = graph(fingerprint);
    if (g.isEmpty()) {
      return Optional.empty();
    }
    List<GraphLog.Entry> entries = new ArrayList<>();
    forEachEntry(fingerprint, (kb, info, r) -> entries.add(new GraphLog.Entry(info, readLog(kb, r))));
    return Optional.of(new GraphLog(g.get(), List.copyOf(entries)));
  }

  /** The compiler's log of one entry; empty when the entry is absent or has no log. Only that entry's log is read. */
  public String log(ArtifactKey key) {
    byte[] kb = key.bytes();
    ArtifactRecord r = readArtifactRecord(kb);
    return r == null ? "" : readLog(kb, r);
  }

  /** The graph's entries (compiled or failed), one per compiler, metadata only: no bytes or logs are read. */
  public List<ArtifactInfo> entries(GraphFingerprint fingerprint) {
    List<ArtifactInfo> out = new ArrayList<>();
    forEachEntry(fingerprint, (kb, info, r) -> out.add(info));
    return out;
  }

  private interface EntryVisitor {
    void visit(byte[] key, ArtifactInfo info, ArtifactRecord record);
  }

  /** The graph's artifact records in key order; one whose compiler identity record is missing is left out (verify reports it). */
  private void forEachEntry(GraphFingerprint fingerprint, EntryVisitor visitor) {
    byte[] fp = fingerprint.digest();
    try (Cursor c = db.cursor(Cf.ARTIFACT_META, fp)) {
      for (; c.valid() && Keys.startsWith(c.key(), fp); c.next()) {
        byte[] kb = c.key();
        CompilerIdentity id = identity(Keys.hex(Keys.compilerOf(kb)));
        if (id == null) {
          continue;
        }
        ArtifactRecord r = Records.decodeArtifact(c.value());
        visitor.visit(kb, ArtifactInfo.of(new ArtifactKey(fingerprint, id), r), r);
      }
    }
  }

  private String readLog(byte[] kb, ArtifactRecord r) {
    if (r.logStoredBytes() == 0) {
      return "";
    }
    try {
      if (r.logStoredBytes() > MAX_ARRAY_BYTES) {
        return "(the log is too large to show: " + r.logStoredBytes() + " bytes compressed)";
      }
      CheckedValue read = CheckedValue.read(values, Cf.LOGS, kb, r.logStoredBytes(), r.logSha256());
      if (read instanceof CheckedValue.Gone) {
        return "";
      }
      if (read instanceof CheckedValue.Ok(byte[] stored)) {
        return new String(Zstd.decompress(stored, Math.toIntExact(r.logRawBytes())), StandardCharsets.UTF_8);
      }
    } catch (RuntimeException e) {
      // damaged or undecodable: the text below says so
    }
    return "(the log is damaged; run 'xlac cache verify --repair')";
  }

  // ---------------------------------------------------------------- maintenance

  /** Rows for {@code cache ls}. */
  public List<ListRow> list(ListQuery query) {
    return new CacheListing(this).list(query);
  }

  /** Figures for {@code cache stat}. */
  public CacheStatistics statistics() {
    return CacheListing.statistics(this, currentTotals());
  }

  /** Sets the usage counters (hits, misses, time saved, cleanups) to zero. */
  public void zeroStatistics() {
    requireWritable();
    pendingHits.set(0);
    pendingMisses.set(0);
    pendingSavedMillis.set(0);
    pendingDamaged.set(0);
    commit(true, txn -> {
      Totals t = txn.totals;
      t.hits = 0;
      t.misses = 0;
      t.savedMillis = 0;
      t.cleanups = 0;
      t.damagedReads = 0;
      t.countersSince = clock.millis();
      return null;
    });
  }

  public OptionalLong maxSize() {
    return maxSize;
  }

  /** Sets (or with an empty value, removes) the size limit enforced after every write. */
  public void setMaxSize(OptionalLong bytes) {
    requireWritable();
    commit(true, txn -> {
      if (bytes.isPresent()) {
        db.put(txn.batch, Cf.META, MAX_SIZE_KEY, Long.toString(bytes.getAsLong()).getBytes(StandardCharsets.US_ASCII));
      } else {
        db.delete(txn.batch, Cf.META, MAX_SIZE_KEY);
      }
      return null;
    });
    maxSize = bytes;
    enforceMaxSize();
  }

  /**
   * Removes entries as the request says; see {@link PruneRequest}. The prune holds the write lock
   * from its plan to its last removal, so it removes exactly what it planned: no other thread's
   * write (a graph gaining an artifact, another cleanup) can slip in between.
   */
  public PruneResult prune(PruneRequest request) {
    if (!request.dryRun()) {
      requireWritable();
    }
    writeLock.lock();
    try {
      return new PruneByLastAccess(this).prune(request);
    } finally {
      writeLock.unlock();
      if (!request.dryRun()) {
        db.ensureReserve(notices); // released for a prune on a full disk: back when there is room
      }
    }
  }

  /**
   * Pins what a compile run uses until the returned {@link RunPins} is closed: the automatic size
   * limit never removes a graph this store stores or looks up, nor an artifact it stores, records a
   * failure for or finds, meanwhile. Closing it enforces the limit at once. One run at a time.
   */
  public RunPins pinForRun() {
    requireWritable();
    RunPins pins = new RunPins(this);
    if (!runPins.compareAndSet(null, pins)) {
      throw new IllegalStateException("cache " + dir + " already pins the entries of a run");
    }
    return pins;
  }

  /** The pins of the running compile, or null. */
  RunPins runPins() {
    return runPins.get();
  }

  void endRun(RunPins pins) {
    if (!runPins.compareAndSet(pins, null) || closed) {
      return;
    }
    try {
      enforceMaxSize();
    } catch (XlacException e) {
      notices.accept("cannot bring cache " + dir + " back within its max-size after the run: " + e.getMessage());
    }
  }

  private void pinGraph(byte[] fp) {
    RunPins pins = runPins.get();
    if (pins != null) {
      pins.pinGraph(fp);
    }
  }

  private void pinArtifact(ArtifactKey key) {
    if (runPins.get() != null) {
      pinArtifact(key.bytes());
    }
  }

  private void pinArtifact(byte[] key) {
    RunPins pins = runPins.get();
    if (pins != null) {
      pins.pinArtifact(key);
    }
  }

  /** Removes graphs and all their artifacts; returns the bytes freed. Unknown fingerprints are ignored. */
  public long remove(List<GraphFingerprint> fingerprints) {
    requireWritable();
    db.makeRoom();
    long freed = 0;
    for (GraphFingerprint f : fingerprints) {
      byte[] fp = f.digest();
      freed += commit(false, txn -> txn.removeGraph(fp));
    }
    db.syncWal();
    memory.invalidateAll();
    db.ensureReserve(notices);
    return freed;
  }

  /**
   * Removes every graph and artifact, keeping the settings (every {@code config/} record: max-size,
   * require-signed, trusted keys) and the usage counters; returns the stored bytes removed. It swaps
   * in a fresh database rather than deleting records ({@link RocksDbStore#replaceWithFresh}), so it
   * needs no free space to speak of and works on a full disk; a crash leaves the old cache or the
   * cleared one.
   */
  public long clear() {
    requireWritable();
    writeLock.lock();
    try {
      java.util.Map<byte[], byte[]> keep = new java.util.LinkedHashMap<>();
      keep.put(SCHEMA_KEY, Integer.toString(SCHEMA_VERSION).getBytes(StandardCharsets.US_ASCII));
      try (Cursor c = db.cursor(Cf.META, CONFIG_PREFIX)) {
        for (; c.valid() && Keys.startsWith(c.key(), CONFIG_PREFIX); c.next()) {
          keep.put(c.key(), c.value());
        }
      }
      long removed = totals.storedBytes();
      long h = pendingHits.getAndSet(0);
      long m = pendingMisses.getAndSet(0);
      long sv = pendingSavedMillis.getAndSet(0);
      long d = pendingDamaged.getAndSet(0);
      Totals counters = new Totals();
      counters.copyCountersFrom(totals);
      counters.hits += h;
      counters.misses += m;
      counters.savedMillis += sv;
      counters.damagedReads += d;
      keep.put(TOTALS_KEY, Records.encode(counters));
      db.makeRoom();
      try {
        db.replaceWithFresh(keep); // rereads the totals and settings (see reread)
      } catch (RuntimeException e) {
        pendingHits.addAndGet(h);
        pendingMisses.addAndGet(m);
        pendingSavedMillis.addAndGet(sv);
        pendingDamaged.addAndGet(d);
        throw e;
      }
      return removed;
    } finally {
      writeLock.unlock();
      db.ensureReserve(notices);
    }
  }

  /** Checks every checksum and index record; with {@code repair}, drops what is damaged. */
  public VerifyReport verify(boolean repair) {
    if (repair) {
      requireWritable();
      db.makeRoom(); // a repair on a full disk writes a little
    }
    VerifyReport r = new CacheVerifier(this).verify(repair);
    if (repair) {
      memory.invalidateAll();
      db.ensureReserve(notices);
    }
    return r;
  }

  /**
   * Writes a bundle of the selected entries to {@code file}; see {@link BundleExporter}. First removes what
   * earlier exports to {@code file} that were killed left beside it (see {@link SiblingTemporaries}).
   */
  public BundleExporter.Result exportBundle(Path file, ExportRequest request) {
    for (SiblingTemporaries.Removed r : SiblingTemporaries.removeStale(file)) {
      notices.accept("removed " + r.file() + " (" + Sizes.human(r.bytes())
          + "), left by an export that did not finish");
    }
    return new BundleExporter(this).export(file, request);
  }

  /** Merges a bundle into this cache, after validating all of it; see {@link BundleImporter}. */
  public BundleImporter.Result importBundle(Path file) {
    return importBundle(file, ImportRequest.defaults());
  }

  /**
   * As {@link #importBundle(Path)}, with the request's trusted keys besides the cache's {@link #trustSettings()},
   * and its limit on unpacked bytes, if it has one, instead of the cache's {@link #importMaxUnpacked()}.
   */
  public BundleImporter.Result importBundle(Path file, ImportRequest request) {
    requireWritable();
    BundleImporter.Trust trust = new BundleImporter.Trust(trustSettings(), request);
    ImportLimit limit = request.maxUnpacked() != null ? request.maxUnpacked() : importMaxUnpacked();
    BundleImporter.Result r = new BundleImporter(this, BundleLimits.DEFAULT, trust, limit, () -> { }).importBundle(file);
    memory.invalidateAll();
    enforceMaxSize();
    return r;
  }

  /** The most bytes a bundle may unpack to on import ({@code cache config import-max-unpacked}); see {@link ImportLimit}. */
  public ImportLimit importMaxUnpacked() {
    return ImportLimit.read(this);
  }

  /** Sets {@link #importMaxUnpacked()}: a {@link ImportLimit#setting}, or {@link ImportLimit#defaults()} to remove it. */
  public void setImportMaxUnpacked(ImportLimit limit) {
    requireWritable();
    ImportLimit.write(this, limit);
  }

  /** Which bundle signers this cache trusts, and whether it imports only signed bundles; see {@link TrustConfig}. */
  public TrustSettings trustSettings() {
    return TrustConfig.read(this);
  }

  /** {@code cache config require-signed on|off}. */
  public void setRequireSigned(boolean on) {
    requireWritable();
    TrustConfig.setRequireSigned(this, on);
  }

  /** {@code cache config trust add PUBKEY}; false when the key is trusted already. */
  public boolean trustKey(BundleKey key, String label) {
    requireWritable();
    return TrustConfig.add(this, key, label);
  }

  /**
   * {@code cache config trust remove KEYID}: the key with this id or unique prefix (8 or more hex
   * digits). Null when its record was damaged (it is removed all the same).
   */
  public TrustSettings.TrustedKey untrustKey(String keyIdOrPrefix) {
    requireWritable();
    return TrustConfig.remove(this, keyIdOrPrefix);
  }

  /** Finds the stored graph a user means: a full fingerprint or a unique prefix of at least 6 hex digits. */
  public GraphFingerprint resolve(String text) {
    String t = text.strip().toLowerCase(java.util.Locale.ROOT);
    if (t.startsWith(GraphFingerprint.VERSION + ":")) {
      t = t.substring(GraphFingerprint.VERSION.length() + 1);
    }
    if (!t.matches("[0-9a-f]{6,64}")) {
      throw XlacException.badInput("not a fingerprint: '" + text + "' (give hlo1:<64 hex digits> or at least 6 of them)");
    }
    byte[] seek = HexFormat.of().parseHex(t.substring(0, t.length() & ~1));
    List<byte[]> found = new ArrayList<>();
    try (Cursor c = db.cursor(Cf.GRAPH_META, seek)) {
      for (; c.valid() && found.size() < 2; c.next()) {
        byte[] fp = c.key();
        if (!Keys.hex(fp).startsWith(t)) {
          break;
        }
        found.add(fp);
      }
    }
    if (found.isEmpty()) {
      throw new XlacException(ExitCode.BAD_INPUT, "no graph in cache " + dir + " has fingerprint " + text);
    }
    if (found.size() > 1) {
      throw XlacException.badInput("fingerprint prefix " + text + " is ambiguous; give more digits");
    }
    return Keys.fingerprint(found.getFirst());
  }

  // ---------------------------------------------------------------- internals

  Totals currentTotals() {
    Totals t = totals.copy();
    t.hits += pendingHits.get();
    t.misses += pendingMisses.get();
    t.savedMillis += pendingSavedMillis.get();
    t.damagedReads += pendingDamaged.get();
    return t;
  }

  void requireWritable() {
    if (mode != Mode.READ_WRITE) {
      throw new IllegalStateException("cache " + dir + " is open read-only");
    }
  }

  GraphRecord readGraphRecord(byte[] fp) {
    byte[] v = db.get(Cf.GRAPH_META, fp);
    return v == null ? null : Records.decodeGraph(v);
  }

  ArtifactRecord readArtifactRecord(byte[] key) {
    byte[] v = db.get(Cf.ARTIFACT_META, key);
    return v == null ? null : Records.decodeArtifact(v);
  }

  /** The identity with this hex digest, or null when its record is missing. */
  CompilerIdentity identity(String digest) {
    CompilerIdentity known = identities.get(digest);
    if (known != null) {
      return known;
    }
    byte[] v = db.get(Cf.IDENTITIES, HexFormat.of().parseHex(digest));
    if (v == null) {
      return null;
    }
    try {
      CompilerIdentity id = CompilerIdentity.decode(new String(v, StandardCharsets.UTF_8));
      if (!id.digest().equals(digest)) {
        return null;
      }
      identities.put(digest, id);
      return id;
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  void reportDamage(String what, String why) {
    notices.accept("cache " + dir + ": " + what + " is damaged: " + why
        + "; treated as a miss (run 'xlac cache verify --repair')");
  }

  /**
   * Trims the cache to {@link #CLEANUP_TARGET} of the configured maximum when it has grown past it,
   * least recently used first, leaving what a running compile pinned ({@link RunPins}). When the
   * pinned entries alone are over the limit, the cache stays over it and says so once per run.
   */
  void enforceMaxSize() {
    OptionalLong max = maxSize;
    if (mode != Mode.READ_WRITE || max.isEmpty() || totals.storedBytes() <= max.getAsLong()) {
      return;
    }
    long limit = max.getAsLong();
    long target = (long) (limit * CLEANUP_TARGET);
    writeLock.lock(); // the check, the prune and what it leaves are one step for concurrent writers
    try {
      if (totals.storedBytes() <= limit) {
        return; // another thread's cleanup came first
      }
      RunPins pins = runPins.get();
      if (pins == null || !pins.onlyPinnedLeft()) {
        new PruneByLastAccess(this).prune(PruneRequest.automatic(target));
      }
      long left = totals.storedBytes();
      if (pins != null && left > target) {
        pins.onlyPinnedLeft(true); // the prune removed every unpinned entry and still was over
      }
      if (pins != null && left > limit && pins.firstTimeOverLimit()) {
        notices.accept("cache " + dir + " holds " + Sizes.human(left) + ", over its max-size of " + Sizes.human(limit)
            + ", all of it in use by this run: it stays over the limit until the run ends, when the least recently"
            + " used entries are removed (raise the limit with 'xlac cache config max-size SIZE')");
      }
    } finally {
      writeLock.unlock();
    }
  }

  /** Every entry a batch writes: see {@link RunPins#written}. */
  private void written(byte kind, byte[] id) {
    RunPins pins = runPins.get();
    if (pins != null) {
      pins.written(kind, id);
    }
  }

  void invalidateMemory() {
    memory.invalidateAll();
  }

  /** One atomic WriteBatch: the body adds records, the totals record is rewritten with them. */
  @FunctionalInterface
  interface TxnBody<T> {
    T apply(Txn txn);
  }

  <T> T commit(boolean sync, TxnBody<T> body) {
    return commit(sync, true, body);
  }

  /**
   * A batch that skips the write-ahead log (bulk imports): durable after {@link #flushUnlogged()};
   * a process killed before loses it whole (see {@link RocksDbStore#writeUnlogged}).
   */
  <T> T commitUnlogged(TxnBody<T> body) {
    return commit(false, false, body);
  }

  /**
   * As {@link #commitUnlogged(TxnBody)}, into {@code reused}, which is cleared first and left to the
   * caller: a bulk writer that keeps one batch keeps its native buffer, instead of growing a fresh
   * one (copy after copy, page fault after page fault) for every batch.
   */
  <T> T commitUnlogged(WriteBatch reused, TxnBody<T> body) {
    return commit(false, false, reused, body);
  }

  /** Makes every unlogged batch durable (one atomic flush of all families). */
  void flushUnlogged() {
    db.flushAll();
  }

  private <T> T commit(boolean sync, boolean logged, TxnBody<T> body) {
    try (WriteBatch batch = new WriteBatch()) {
      return commit(sync, logged, batch, body);
    }
  }

  private <T> T commit(boolean sync, boolean logged, WriteBatch batch, TxnBody<T> body) {
    requireWritable();
    writeLock.lock();
    try {
      batch.clear(); // a reused batch keeps its native buffer's capacity
      Txn txn = new Txn(batch, totals.copy());
      T result = body.apply(txn);
      long h = pendingHits.getAndSet(0);
      long m = pendingMisses.getAndSet(0);
      long s = pendingSavedMillis.getAndSet(0);
      long d = pendingDamaged.getAndSet(0);
      txn.totals.hits += h;
      txn.totals.misses += m;
      txn.totals.savedMillis += s;
      txn.totals.damagedReads += d;
      db.put(batch, Cf.META, TOTALS_KEY, Records.encode(txn.totals));
      try {
        if (logged) {
          db.write(batch, sync);
        } else {
          db.writeUnlogged(batch);
        }
        txn.valueWriters.forEach(StoredValues.ValueWriter::committed);
      } catch (RuntimeException e) {
        pendingHits.addAndGet(h);
        pendingMisses.addAndGet(m);
        pendingSavedMillis.addAndGet(s);
        pendingDamaged.addAndGet(d);
        throw e;
      }
      totals = txn.totals;
      return result;
    } finally {
      writeLock.unlock();
    }
  }

  /**
   * The records of one batch. Reads go through an overlay of what the batch already wrote, and
   * every write keeps the access index and the totals in step with the records, so a batch is
   * always self-consistent however many changes it holds.
   */
  final class Txn {
    private static final Object REMOVED = new Object();
    final WriteBatch batch;
    Totals totals;
    private final java.util.Map<ByteBuffer, Object> graphs = new java.util.HashMap<>();
    private final java.util.TreeMap<ByteBuffer, Object> artifacts = new java.util.TreeMap<>();
    private final Set<String> identitiesWritten = new HashSet<>();
    private final List<StoredValues.ValueWriter> valueWriters = new ArrayList<>();

    Txn(WriteBatch batch, Totals totals) {
      this.batch = batch;
      this.totals = totals;
    }

    GraphRecord graph(byte[] fp) {
      Object o = graphs.get(ByteBuffer.wrap(fp));
      if (o != null) {
        return o == REMOVED ? null : (GraphRecord) o;
      }
      return readGraphRecord(fp);
    }

    ArtifactRecord artifact(byte[] key) {
      Object o = artifacts.get(ByteBuffer.wrap(key));
      if (o != null) {
        return o == REMOVED ? null : (ArtifactRecord) o;
      }
      return readArtifactRecord(key);
    }

    void requireGraph(ArtifactKey key) {
      if (graph(key.graph().digest()) == null) {
        throw XlacException.badInput("graph " + key.graph() + " is not in cache " + dir
            + "; store the graph before its artifacts");
      }
    }

    void putIdentity(CompilerIdentity id) {
      putIdentityText(id.digest(), id.encode().getBytes(StandardCharsets.UTF_8));
    }

    void putIdentityText(String digest, byte[] text) {
      if (identitiesWritten.add(digest) && identity(digest) == null) {
        db.put(batch, Cf.IDENTITIES, HexFormat.of().parseHex(digest), text);
      }
    }

    /**
     * Adds the rest of a value written in pieces to this batch: the value belongs to the record this
     * batch writes, once it is written. Write the record with a null value in the same batch.
     */
    void commitValue(StoredValues.ValueWriter w) {
      w.addTo(batch);
      valueWriters.add(w);
    }

    /** Writes a graph record (and its stored module when {@code stored} is not null). */
    void writeGraph(byte[] fp, GraphRecord rec, byte[] stored) {
      written(Keys.KIND_GRAPH, fp);
      GraphRecord old = graph(fp);
      if (old != null) {
        db.delete(batch, Cf.ACCESS, Keys.access(old.lastAccess(), Keys.KIND_GRAPH, fp));
        totals.addGraph(old, -1);
      }
      db.put(batch, Cf.GRAPH_META, fp, Records.encode(rec));
      if (stored != null) {
        values.put(batch, Cf.GRAPHS, fp, stored, old == null ? -1 : old.storedBytes());
      }
      db.put(batch, Cf.ACCESS, Keys.access(rec.lastAccess(), Keys.KIND_GRAPH, fp),
          Records.accessValue(rec.storedBytes(), EntryStatus.PENDING, null));
      totals.addGraph(rec, 1);
      graphs.put(ByteBuffer.wrap(fp.clone()), rec);
    }

    /** Keeps a graph's last access at least as recent as its artifacts', so LRU removes artifacts first. */
    void touchGraph(byte[] fp, long now) {
      GraphRecord g = graph(fp);
      if (g != null && g.lastAccess() < now) {
        writeGraph(fp, g.withLastAccess(now), null);
      }
    }

    /**
     * Writes an artifact record; {@code bytes} and {@code storedLog} replace the stored values when
     * not null. A failed record drops any stored bytes; a record without a log drops a stored log.
     */
    void writeArtifact(byte[] key, ArtifactRecord rec, byte[] bytes, byte[] storedLog) {
      written(Keys.KIND_ARTIFACT, key);
      ArtifactRecord old = artifact(key);
      if (old != null) {
        db.delete(batch, Cf.ACCESS, Keys.access(old.lastAccess(), Keys.KIND_ARTIFACT, key));
        totals.addArtifact(old, -1);
      }
      db.put(batch, Cf.ARTIFACT_META, key, Records.encode(rec));
      long oldBytes = old != null && old.status() == EntryStatus.COMPILED ? old.bytes() : -1;
      if (bytes != null) {
        values.put(batch, Cf.ARTIFACTS, key, bytes, oldBytes);
      } else if (rec.status() == EntryStatus.FAILED && oldBytes >= 0) {
        values.delete(batch, Cf.ARTIFACTS, key, oldBytes);
      }
      long oldLog = old != null && old.logStoredBytes() > 0 ? old.logStoredBytes() : -1;
      if (storedLog != null) {
        values.put(batch, Cf.LOGS, key, storedLog, oldLog);
      } else if (rec.logStoredBytes() == 0 && oldLog >= 0) {
        values.delete(batch, Cf.LOGS, key, oldLog);
      }
      db.put(batch, Cf.ACCESS, Keys.access(rec.lastAccess(), Keys.KIND_ARTIFACT, key),
          Records.accessValue(rec.storedBytes(), rec.status(), Keys.compilerOf(key)));
      totals.addArtifact(rec, 1);
      artifacts.put(ByteBuffer.wrap(key.clone()), rec);
      touchGraph(Keys.graphOf(key), rec.lastAccess());
    }

    /** Removes an artifact entry; returns the bytes it occupied. */
    long removeArtifact(byte[] key) {
      ArtifactRecord old = artifact(key);
      if (old == null) {
        return 0;
      }
      db.delete(batch, Cf.ARTIFACT_META, key);
      values.delete(batch, Cf.ARTIFACTS, key, old.bytes());
      values.delete(batch, Cf.LOGS, key, old.logStoredBytes());
      db.delete(batch, Cf.ACCESS, Keys.access(old.lastAccess(), Keys.KIND_ARTIFACT, key));
      totals.addArtifact(old, -1);
      artifacts.put(ByteBuffer.wrap(key.clone()), REMOVED);
      return old.storedBytes();
    }

    /** Removes a graph and every artifact made from it; returns the bytes they occupied. */
    long removeGraph(byte[] fp) {
      GraphRecord old = graph(fp);
      if (old == null) {
        return 0;
      }
      long freed = 0;
      java.util.TreeSet<ByteBuffer> keys = new java.util.TreeSet<>();
      try (Cursor c = db.cursor(Cf.ARTIFACT_META, fp)) {
        for (; c.valid() && Keys.startsWith(c.key(), fp); c.next()) {
          keys.add(ByteBuffer.wrap(c.key()));
        }
      }
      ByteBuffer from = ByteBuffer.wrap(fp);
      for (ByteBuffer k : artifacts.tailMap(from, true).keySet()) {
        if (!Keys.startsWith(k.array(), fp)) {
          break;
        }
        keys.add(k);
      }
      for (ByteBuffer k : keys) {
        freed += removeArtifact(k.array());
      }
      db.delete(batch, Cf.GRAPH_META, fp);
      values.delete(batch, Cf.GRAPHS, fp, old.storedBytes());
      db.delete(batch, Cf.ACCESS, Keys.access(old.lastAccess(), Keys.KIND_GRAPH, fp));
      totals.addGraph(old, -1);
      graphs.put(ByteBuffer.wrap(fp.clone()), REMOVED);
      return freed + old.storedBytes();
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      if (mode == Mode.READ_WRITE && (pendingHits.get() | pendingMisses.get() | pendingDamaged.get()) != 0) {
        commit(true, txn -> null); // write the usage counters
      }
    } catch (RuntimeException e) {
      notices.accept("cannot save the cache's usage counters: " + XlacException.reason(e));
    } finally {
      closeHandles();
    }
  }

  private void closeHandles() {
    memory.invalidateAll();
    db.close();
    if (lock != null) {
      lock.close();
    }
  }
}
