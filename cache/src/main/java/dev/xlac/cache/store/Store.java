package dev.xlac.cache.store;

import com.github.luben.zstd.Zstd;
import dev.xlac.cache.Artifact;
import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.GraphEntry;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.GraphLog;
import dev.xlac.cache.NewFailure;
import dev.xlac.cache.PutOutcome;
import dev.xlac.cache.store.Records.ArtifactRecord;
import dev.xlac.cache.store.Records.GraphRecord;
import dev.xlac.cache.store.Records.RequestRecord;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.hlo.GraphFingerprint;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.rocksdb.WriteBatch;

/**
 * The engine under {@code CacheStore}: the one owner of the writer lock, the RocksDB instance and
 * its values, opened in one place and closed in one order ({@link #close}: usage counters, memory,
 * database, lock; safe twice). Graphs (fingerprint to HLO module) and the artifacts compiled from
 * them (graph fingerprint + compiler identity to bytes) are written through {@link #commit}
 * transactions ({@link Txn}) and read back checksum-verified.
 *
 * <p>Invariants (see cache/README.md): every update that touches several records is one atomic
 * WriteBatch, which also rewrites the running totals; every artifact record refers to a stored
 * graph; every value carries a SHA-256 checked on each read, and a value that is missing or fails
 * it is a miss, never returned, and reported; one process writes at a time (the lock names it),
 * while any number read through RocksDB read-only instances. Value I/O (whole or chunked values,
 * streaming, the checksum-only probe of lookups) lives in {@link StoredValues}.
 *
 * <p>Lookups go through {@link ArtifactMemory}: concurrent requests for one key share one load,
 * and a failed load is not kept.
 *
 * <p>Durability: artifacts and failures are fsynced before their writes return; other writes reach
 * the operating system before returning (so they survive the process being killed) and are fsynced
 * when the operation that made them ends. Imports skip the write-ahead log ({@link #bulk}) and end
 * with one flush, atomic across the column families, that leaves them in fsynced files.
 *
 * <p>This package uses neither {@code CacheStore} nor the ops, bundle and layout packages: the
 * automatic size limit, which prunes, is a hook the facade installs ({@link #onOverLimit}).
 */
public final class Store implements AutoCloseable {
  /**
   * The version of the key space and record layouts this build writes. Version 2 added Neuron names
   * to graph records (graph_meta format 2); version 3 stores values larger than 8 MiB in chunks
   * ({@link StoredValues}); version 4 adds the runtime's recorded PJRT compile requests and their executables
   * (families {@code requests}, {@code request_meta}, {@code executables}; access kind 2; five more totals). Every record of an older version is valid in the newer one, so an older
   * cache is read as it is and upgraded by rewriting the version when opened for writing.
   */
  public static final int SCHEMA_VERSION = 4;
  /** The oldest schema version this build reads (and upgrades). */
  public static final int OLDEST_READABLE_SCHEMA = 1;
  static final byte[] SCHEMA_KEY = "schema_version".getBytes(StandardCharsets.US_ASCII);
  public static final byte[] TOTALS_KEY = "totals".getBytes(StandardCharsets.US_ASCII);
  static final byte[] MAX_SIZE_KEY = "config/max_size".getBytes(StandardCharsets.US_ASCII);
  /** Every setting of the cache lives under this prefix of the meta family; {@link #clear} keeps them. */
  public static final byte[] CONFIG_PREFIX = "config/".getBytes(StandardCharsets.US_ASCII);
  /** Last-access times are rewritten at most this often per entry (ccache-style approximate LRU). */
  static final long TOUCH_INTERVAL_MILLIS = 60_000;
  /** An automatic cleanup trims to this fraction of the configured maximum, so it does not run on every write. */
  public static final double CLEANUP_TARGET = 0.9;
  private static final long MEMORY_CACHE_BYTES = 256L << 20;
  static final int ZSTD_LEVEL = 3;
  /** The largest value handed out as one array (a little under 2 GiB, as the JDK's own arrays allow). */
  public static final long MAX_ARRAY_BYTES = Integer.MAX_VALUE - 8;

  public final Path dir;
  final boolean writable;
  private final CacheLock lock;
  final RocksDbStore db;
  final StoredValues values;
  final Clock clock;
  final Consumer<String> notices;
  /** Held by every batch, and by a prune from its plan to its last removal (see {@link #underWriteLock}). */
  final ReentrantLock writeLock = new ReentrantLock();
  private volatile Totals totals;
  /** The schema version on disk (a read-only store of an older cache keeps reading it; 0: no cache yet). */
  private int schemaVersion = SCHEMA_VERSION;
  private volatile OptionalLong maxSize;
  final UsageCounters pending = new UsageCounters();
  final ArtifactMemory memory;
  private final ConcurrentHashMap<String, CompilerIdentity> identities = new ConcurrentHashMap<>();
  private final AtomicReference<Pins> runPins = new AtomicReference<>();
  private volatile Runnable overLimit = () -> { };
  private final GraphWrites graphWrites = new GraphWrites(this);
  private final ArtifactWrites artifactWrites = new ArtifactWrites(this);
  private final EntryReads reads = new EntryReads(this);
  private final RequestEntries requestEntries = new RequestEntries(this);
  private boolean closed;
  /** Whether this store removed a runtime request (or may have): a layout may serve what the cache no longer holds. */
  private volatile boolean requestsRemoved;

  private Store(Path dir, boolean writable, CacheLock lock, RocksDbStore db, Clock clock, Consumer<String> notices) {
    this.dir = dir;
    this.writable = writable;
    this.lock = lock;
    this.db = db;
    this.values = new StoredValues(db);
    this.clock = clock;
    this.notices = notices;
    this.memory = new ArtifactMemory(MEMORY_CACHE_BYTES);
  }

  /**
   * Opens the cache at {@code dir}: read-only (creating nothing: a directory without a cache reads
   * as an empty one), or for writing under the cache's single-writer lock.
   *
   * @param lockWait when writable: how long to wait for another writer to finish
   *     ({@link Duration#ZERO}: fail at once with a message naming it; null: wait as long as it takes)
   * @param notices receives one-line notes for the user: waiting for the lock, damaged entries met
   * @throws XlacException exit code 3 when the cache is locked, on a newer schema, or the disk is full
   */
  public static Store open(Path dir, boolean writable, Duration lockWait, Consumer<String> notices, Clock clock)
      throws InterruptedException {
    Path abs = dir.toAbsolutePath().normalize();
    if (!writable) {
      RocksDbStore db = RocksDbStore.open(abs, false);
      return init(new Store(abs, false, null, db, clock, notices));
    }
    Held held = lock(abs, lockWait, notices);
    try {
      return held.open(clock, true);
    } catch (RuntimeException e) {
      held.close();
      throw e;
    }
  }

  /**
   * Takes the writer lock of the cache at {@code dir} without opening the database (a replacement a crash
   * interrupted is finished or undone first), so that a caller can look at the database's files with no writer
   * in between: before it opens them, and after it has closed them.
   */
  public static Held lock(Path dir, Duration lockWait, Consumer<String> notices) throws InterruptedException {
    Path abs = dir.toAbsolutePath().normalize();
    CacheLock lock = CacheLock.acquire(abs, lockWait, notices);
    try {
      DatabaseSwap.recover(abs, notices); // a repair a crash interrupted: finished or undone
    } catch (RuntimeException e) {
      lock.close();
      throw e;
    }
    return new Held(abs, lock, notices);
  }

  /** The writer lock, held until {@link #close}; the stores it opens leave it held when they close. */
  public static final class Held implements AutoCloseable {
    private final Path abs;
    private final CacheLock lock;
    private final Consumer<String> notices;

    private Held(Path abs, CacheLock lock, Consumer<String> notices) {
      this.abs = abs;
      this.lock = lock;
      this.notices = notices;
    }

    /** Opens the database for writing under this lock. */
    public Store open(Clock clock) {
      return open(clock, false);
    }

    private Store open(Clock clock, boolean releasesLock) {
      return init(new Store(abs, true, releasesLock ? lock : null, RocksDbStore.open(abs, true), clock, notices));
    }

    @Override
    public void close() {
      lock.close();
    }
  }

  /** For {@code CacheRepair}: opens {@code abs} for writing under the writer lock the caller holds (and keeps). */
  public static Store openLocked(Path abs, Consumer<String> notices, Clock clock) {
    return init(new Store(abs, true, null, RocksDbStore.open(abs, true), clock, notices));
  }

  /**
   * For a repair's salvage ({@code repair.CacheSalvage}): a new cache in a repair's private rebuild directory,
   * written under the real cache's lock, and without a disk reserve of its own (the rebuild needs that space).
   */
  public static Store openRebuild(Path rebuildDir, Consumer<String> notices, Clock clock) {
    Path abs = rebuildDir.toAbsolutePath().normalize();
    return init(new Store(abs, true, null, RocksDbStore.open(abs, true), clock, notices), false);
  }

  private static Store init(Store s) {
    return init(s, true);
  }

  private static Store init(Store s, boolean reserve) {
    try {
      s.checkSchema();
      if (s.writable) {
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
    Schema.Found found = Schema.check(db, dir, writable, clock);
    schemaVersion = found.version();
    totals = found.totals();
    maxSize = found.maxSize();
  }

  /**
   * After the database was reopened (a full disk) or replaced ({@link #clear}): what this store
   * remembers of it is read again. Unlogged batches that were not flushed are gone with the old
   * instance, so the totals they wrote are too.
   */
  private void reread() {
    writeLock.lock();
    try {
      totals = Schema.totals(db);
      maxSize = Schema.maxSize(db);
    } catch (RuntimeException e) {
      // keep what we had: the next write fails the same way, and says why
    } finally {
      writeLock.unlock();
    }
    memory.invalidateAll();
    identities.clear();
  }

  // ---------------------------------------------------------------- entries

  /** Graph writes: {@code putGraph(GraphEntry)}, {@code addNeuronName}. */
  public GraphWrites graphWrites() {
    return graphWrites;
  }

  /** Artifact writes: {@code putArtifacts}, {@code recordFailures}. */
  public ArtifactWrites artifactWrites() {
    return artifactWrites;
  }

  /** The runtime's recorded requests and their executables (schema version 4). */
  public RequestEntries requestEntries() {
    return requestEntries;
  }

  /** Reads of graphs, artifacts, entries and logs. */
  public EntryReads reads() {
    return reads;
  }

  // ---------------------------------------------------------------- maintenance

  /** Sets the usage counters (hits, misses, time saved, cleanups) to zero. */
  public void zeroStatistics() {
    requireWritable();
    pending.zero();
    commit(true, txn -> {
      Totals t = txn.totals;
      t.hits = 0;
      t.misses = 0;
      t.savedMillis = 0;
      t.cleanups = 0;
      t.damagedReads = 0;
      t.runtimeHits = 0;
      t.runtimeSavedMillis = 0;
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
        txn.putMeta(MAX_SIZE_KEY, Long.toString(bytes.getAsLong()).getBytes(StandardCharsets.US_ASCII));
      } else {
        txn.deleteMeta(MAX_SIZE_KEY);
      }
      return null;
    });
    maxSize = bytes;
    enforceMaxSize();
  }

  /**
   * Pins what a compile run uses until the returned pins are closed: the automatic size limit never
   * removes a graph this store stores or looks up, nor an artifact it stores, records a failure for
   * or finds, meanwhile. Closing them enforces the limit at once. One run at a time.
   */
  public Pins pinForRun() {
    requireWritable();
    Pins pins = new Pins(this);
    if (!runPins.compareAndSet(null, pins)) {
      throw new IllegalStateException("cache " + dir + " already pins the entries of a run");
    }
    return pins;
  }

  /** The pins of the running compile, or null. */
  public Pins pins() {
    return runPins.get();
  }

  void endRun(Pins pins) {
    if (!runPins.compareAndSet(pins, null) || closed) {
      return;
    }
    try {
      enforceMaxSize();
    } catch (XlacException e) {
      notices.accept("cannot bring cache " + dir + " back within its max-size after the run: " + e.getMessage());
    }
  }

  void pinGraph(byte[] fp) {
    Pins pins = runPins.get();
    if (pins != null) {
      pins.pinGraph(fp);
    }
  }

  void pinArtifact(ArtifactKey key) {
    if (runPins.get() != null) {
      pinArtifact(key.bytes());
    }
  }

  void pinArtifact(byte[] key) {
    Pins pins = runPins.get();
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
      requestsRemoved = true;
      java.util.Map<byte[], byte[]> keep = new java.util.LinkedHashMap<>();
      keep.put(SCHEMA_KEY, Integer.toString(SCHEMA_VERSION).getBytes(StandardCharsets.US_ASCII));
      byte[] counted = db.get(Cf.META, PendingHits.COUNTED_KEY); // with the counters, or a record is counted twice
      if (counted != null) {
        keep.put(PendingHits.COUNTED_KEY, counted);
      }
      try (Cursor c = db.cursor(Cf.META, CONFIG_PREFIX)) {
        for (; c.valid() && Keys.startsWith(c.key(), CONFIG_PREFIX); c.next()) {
          keep.put(c.key(), c.value());
        }
      }
      long removed = totals.storedBytes();
      Totals counters = new Totals();
      counters.copyCountersFrom(totals);
      UsageCounters.Drained drained = pending.drainInto(counters);
      keep.put(TOTALS_KEY, Records.encode(counters));
      db.makeRoom();
      try {
        db.replaceWithFresh(keep); // rereads the totals and settings (see reread)
      } catch (RuntimeException e) {
        drained.restore();
        throw e;
      }
      return removed;
    } finally {
      writeLock.unlock();
      db.ensureReserve(notices);
    }
  }

  // ---------------------------------------------------------------- the narrow API of ops and bundles

  public Path directory() {
    return dir;
  }

  public Clock clock() {
    return clock;
  }

  /** Where notes for the user go. */
  public Consumer<String> noticesSink() {
    return notices;
  }

  /** Passes a one-line note to the user. */
  public void notice(String line) {
    notices.accept(line);
  }

  /** The schema version on disk (0: no cache yet, for a read-only store). */
  public int schemaVersion() {
    return schemaVersion;
  }

  /** The totals record with the usage counted since the last batch. */
  public Totals totals() {
    Totals t = totals.copy();
    pending.addTo(t);
    return t;
  }

  /** The stored bytes the totals record counts (what the size limit compares). */
  public long storedBytes() {
    return totals.storedBytes();
  }

  /** Bytes the database's files take on disk. */
  public long diskUsage() {
    return db.diskUsage();
  }

  /** The disk reserve's state (a read-only store looks at the file without taking it). */
  public DiskReserve.State reserveState() {
    return (db.reserve() != null ? db.reserve() : new DiskReserve(dir)).state();
  }

  /** The database itself: for the repair package, which reads and rewrites it beneath the records. */
  public RocksDbStore db() {
    return db;
  }

  /** The stored values (whole or chunked): for the repair package, which checks and salvages them. */
  public StoredValues values() {
    return values;
  }

  public void requireWritable() {
    if (!writable) {
      throw new IllegalStateException("cache " + dir + " is open read-only");
    }
  }

  public boolean writable() {
    return writable;
  }

  public GraphRecord readGraphRecord(byte[] fp) {
    byte[] v = db.get(Cf.GRAPH_META, fp);
    return v == null ? null : Records.decodeGraph(v);
  }

  public ArtifactRecord readArtifactRecord(byte[] key) {
    byte[] v = db.get(Cf.ARTIFACT_META, key);
    return v == null ? null : Records.decodeArtifact(v);
  }

  /** The request record of a key's 32 digest bytes (schema version 4), or null. */
  public RequestRecord readRequestRecord(byte[] digest) {
    byte[] v = db.get(Cf.REQUEST_META, digest);
    return v == null ? null : Records.decodeRequest(v);
  }

  /** Request records in key order, from {@code from} (null: the first). */
  public RocksDbStore.Cursor requests(byte[] from) {
    return db.cursor(Cf.REQUEST_META, from);
  }

  /** A record of the meta family (settings, schema, totals), or null. */
  public byte[] meta(byte[] key) {
    return db.get(Cf.META, key);
  }

  /** Graph records in fingerprint order, from {@code from} (null: the first). */
  public RocksDbStore.Cursor graphs(byte[] from) {
    return db.cursor(Cf.GRAPH_META, from);
  }

  /** Artifact records in key order (graph fingerprint, then compiler digest), from {@code from} (null: the first). */
  public RocksDbStore.Cursor artifacts(byte[] from) {
    return db.cursor(Cf.ARTIFACT_META, from);
  }

  /** The access index, oldest last access first ({@link Keys#access}). */
  public RocksDbStore.Cursor accessIndex() {
    return db.cursor(Cf.ACCESS, null);
  }

  /** Meta records from {@code prefix} on (the caller stops where the prefix ends). */
  public RocksDbStore.Cursor metaFrom(byte[] prefix) {
    return db.cursor(Cf.META, prefix);
  }

  /** One stored value, checked against its SHA-256; see {@link CheckedValue#read}. */
  public CheckedValue read(ValueKind kind, byte[] key, long size, byte[] sha256) {
    return CheckedValue.read(values, kind.cf, key, size, sha256);
  }

  /** One stored value streamed into {@code out}, checked as it goes; see {@link CheckedValue#stream}. */
  public CheckedValue stream(ValueKind kind, byte[] key, long size, byte[] sha256, java.io.OutputStream out)
      throws java.io.IOException {
    return CheckedValue.stream(values, kind.cf, key, size, sha256, out);
  }

  /** A writer of one value in chunks, each its own batch, for a record a later batch writes; see {@link StoredValues#writer}. */
  public StoredValues.ValueWriter valueWriter(ValueKind kind, byte[] key, long size, boolean claim) {
    return values.writer(kind.cf, key, size, claim);
  }

  /** Whether a value of this size is stored in chunks. */
  public static boolean chunked(long size) {
    return StoredValues.chunked(size);
  }

  /** The most bytes a value holds in one record; larger ones are chunked ({@link StoredValues}). */
  public static long chunkBytes() {
    return StoredValues.chunkBytes();
  }

  /** How large one unlogged batch of a bulk writer may grow ({@link RocksDbStore#bulkBatchBytes}). */
  public static long bulkBatchBytes() {
    return RocksDbStore.bulkBatchBytes();
  }

  /** Whether an I/O error's message says the disk is full. */
  public static boolean isDiskFull(String message) {
    return RocksDbStore.isDiskFull(message);
  }

  /** Where the database's files are (the directory a full disk is measured on). */
  public Path databaseDirectory() {
    return dir.resolve(RocksDbStore.DB_DIR);
  }

  /** Makes the writes so far durable (fsync of the write-ahead log). */
  public void syncWal() {
    db.syncWal();
  }

  /** On a full disk, releases the disk reserve so that a removal can write; see {@link RocksDbStore#makeRoom}. */
  public void makeRoom() {
    db.makeRoom();
  }

  /** Takes the disk reserve back when there is room again. */
  public void ensureReserve() {
    db.ensureReserve(notices);
  }

  /** Bytes of blob files that compaction would free. */
  public long blobGarbageBytes() {
    return db.blobGarbageBytes();
  }

  /** Compacts every family (blob garbage collection forced where there is room); says what it could not reclaim. */
  public RocksDbStore.Compaction compactAll() {
    return db.compactAll();
  }

  /** Runs {@code body} holding the write lock, so no other thread's batch comes between its steps. */
  public <T> T underWriteLock(java.util.function.Supplier<T> body) {
    writeLock.lock();
    try {
      return body.get();
    } finally {
      writeLock.unlock();
    }
  }

  /** The identity with this hex digest, or null when its record is missing. */
  public CompilerIdentity identity(String digest) {
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

  public void reportDamage(String what, String why) {
    notices.accept("cache " + dir + ": " + what + " is damaged: " + why
        + "; treated as a miss (run 'xlac cache verify --repair')");
  }

  /** Installs what runs when a write leaves the cache over its max-size: the facade's size limit (which prunes). */
  public void onOverLimit(Runnable sizeLimit) {
    overLimit = sizeLimit;
  }

  /** After a write: runs the size limit ({@link #onOverLimit}) when the cache has grown past its max-size. */
  public void enforceMaxSize() {
    OptionalLong max = maxSize;
    if (!writable || max.isEmpty() || totals.storedBytes() <= max.getAsLong()) {
      return;
    }
    overLimit.run();
  }

  /** Every entry a batch writes: see {@link Pins#written}. */
  void written(byte kind, byte[] id) {
    Pins pins = runPins.get();
    if (pins != null) {
      pins.written(kind, id);
    }
  }

  /** Forgets the artifacts kept in memory: after entries were removed or replaced behind its back. */
  public void invalidateMemory() {
    memory.invalidateAll();
  }

  /** One atomic WriteBatch: the body adds records, the totals record is rewritten with them. */
  @FunctionalInterface
  public interface TxnBody<T> {
    T apply(Txn txn);
  }

  /**
   * One atomic batch through the write-ahead log: what {@code body} writes, with the totals record
   * and the usage counted since the last batch. {@code sync}: fsynced before this returns.
   */
  public <T> T commit(boolean sync, TxnBody<T> body) {
    return commitFresh(sync, true, body);
  }

  /** One batch that skips the write-ahead log: durable after {@link #flushUnlogged}, lost whole by a kill before. */
  public <T> T commitUnlogged(TxnBody<T> body) {
    return commitFresh(false, false, body);
  }

  private <T> T commitFresh(boolean sync, boolean logged, TxnBody<T> body) {
    try (WriteBatch batch = new WriteBatch()) {
      return commit(sync, logged, batch, body);
    }
  }

  /**
   * A writer of batches that skip the write-ahead log (bulk imports), all into one reused native
   * batch: durable after {@link BulkWriter#flush}; a process killed before loses them whole (see
   * {@link RocksDbStore#writeUnlogged}).
   *
   * @param reserveBytes the batch's initial capacity
   */
  public BulkWriter bulk(long reserveBytes) {
    requireWritable();
    return new BulkWriter(this, reserveBytes);
  }

  /** Makes every unlogged batch durable (one atomic flush of all families). */
  public void flushUnlogged() {
    db.flushAll();
  }

  /** The one commit: {@code batch} is cleared first (a reused batch keeps its native buffer's capacity). */
  <T> T commit(boolean sync, boolean logged, WriteBatch batch, TxnBody<T> body) {
    requireWritable();
    writeLock.lock();
    try {
      batch.clear();
      Txn txn = new Txn(this, batch, totals.copy());
      T result = body.apply(txn);
      UsageCounters.Drained drained = pending.drainInto(txn.totals);
      db.put(batch, Cf.META, TOTALS_KEY, Records.encode(txn.totals));
      try {
        if (logged) {
          db.write(batch, sync);
        } else {
          db.writeUnlogged(batch);
        }
        txn.committed();
      } catch (RuntimeException e) {
        drained.restore();
        throw e;
      }
      totals = txn.totals;
      return result;
    } finally {
      writeLock.unlock();
    }
  }

  /** Whether a runtime request was removed while this store was open ({@link #clear}, a prune, a repair). */
  public boolean requestsRemoved() {
    return requestsRemoved;
  }

  /** Where this store's one-line notes for the user go. */
  public Consumer<String> notices() {
    return notices;
  }

  public void noteRequestsRemoved() {
    requestsRemoved = true;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      if (writable && pending.any()) {
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
