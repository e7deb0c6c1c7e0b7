package dev.xlac.cache;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompactRangeOptions;
import org.rocksdb.CompressionType;
import org.rocksdb.DBOptions;
import org.rocksdb.FlushOptions;
import org.rocksdb.InfoLogLevel;
import org.rocksdb.LRUCache;
import org.rocksdb.MutableColumnFamilyOptions;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Status;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The one owner of every native RocksDB object of a cache: options, column family handles, the
 * database and its iterators. They are created in {@link #open} and closed in {@link #close} in
 * reverse order (iterators, handles, database, options); close is safe twice, and use after
 * close is an error rather than a crash. Every {@link RocksDBException} leaves this class as an
 * {@link XlacException} naming the cache directory, with "disk full" recognised.
 *
 * <p>A writable store opens the database as RocksDB's primary; a read-only one with RocksDB's
 * {@code openReadOnly}, which writes nothing, works while a writer holds the primary, and sees what
 * that writer had committed when it was opened (its flushed files and its write-ahead log). A
 * reader keeps every table file open, and can {@link #refresh} its view when a blob file it needs
 * has been collected by the writer since. A reader of a directory without a database creates none
 * and reads as empty.
 */
final class RocksDbStore implements AutoCloseable {
  enum Cf {
    META("meta", false),
    GRAPHS("graphs", true),
    GRAPH_META("graph_meta", false),
    ARTIFACTS("artifacts", true),
    ARTIFACT_META("artifact_meta", false),
    LOGS("logs", true),
    IDENTITIES("identities", false),
    ACCESS("access_index", false);

    final String cfName;
    final boolean blobs;

    Cf(String cfName, boolean blobs) {
      this.cfName = cfName;
      this.blobs = blobs;
    }

    /** The family of this name, or null (families a newer schema added, RocksDB's "default"). */
    static Cf named(String name) {
      for (Cf cf : values()) {
        if (cf.cfName.equals(name)) {
          return cf;
        }
      }
      return null;
    }
  }

  static final String DB_DIR = "db";
  /** Values of at least this size go to blob files, so compaction does not rewrite artifacts. */
  static final long MIN_BLOB_BYTES = 16 << 10;
  private static final double BLOB_GC_AGE_CUTOFF = 0.25;
  /**
   * Tests only (fault tests in child JVMs): when positive, every family's memtable size, so that
   * flushes happen every few entries rather than every few hundred MB.
   */
  static long writeBufferBytesForTests = 0;

  static {
    loadNativeLibrary();
  }

  /**
   * RocksDB's own loader unpacks its 17 MB library into a new temporary file at every start (about
   * 0.1 s, on every command). Unpack it once into a directory only this user can write, named after
   * the RocksDB jar, and load it from there; on any doubt, fall back to RocksDB's loader.
   */
  private static void loadNativeLibrary() {
    try {
      String resource = org.rocksdb.util.Environment.getJniLibraryFileName("rocksdb");
      String loadedAs = org.rocksdb.util.Environment.getJniLibraryFileName("rocksdbjni");
      java.net.URL url = RocksDB.class.getResource("/" + resource);
      java.net.URL jar = RocksDB.class.getProtectionDomain().getCodeSource().getLocation();
      if (url == null || jar == null) {
        throw new IOException("no bundled library");
      }
      java.net.URLConnection c = url.openConnection();
      c.setUseCaches(false);
      long size = c.getContentLengthLong();
      String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9_.-]", "_");
      Path base = Path.of(System.getProperty("java.io.tmpdir"), "xlac-native-" + user);
      Path dir = base.resolve(Path.of(jar.toURI()).getFileName().toString() + "-" + size);
      for (Path d : List.of(base, dir)) {
        if (!Files.isDirectory(d, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
          Files.createDirectories(d, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
              java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
        }
        // Only a directory of ours that nobody else can write is trusted with code we load.
        var attrs = Files.readAttributes(d, java.nio.file.attribute.PosixFileAttributes.class,
            java.nio.file.LinkOption.NOFOLLOW_LINKS);
        if (!attrs.owner().getName().equals(System.getProperty("user.name"))
            || !java.util.Collections.disjoint(attrs.permissions(), Set.of(
                java.nio.file.attribute.PosixFilePermission.GROUP_WRITE,
                java.nio.file.attribute.PosixFilePermission.OTHERS_WRITE))) {
          throw new IOException(d + " is not private");
        }
      }
      Path lib = dir.resolve(loadedAs);
      if (!Files.isRegularFile(lib, java.nio.file.LinkOption.NOFOLLOW_LINKS) || Files.size(lib) != size) {
        Path tmp = Files.createTempFile(dir, "unpacking-", ".so");
        try (var in = c.getInputStream()) {
          Files.copy(in, tmp, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
          Files.move(tmp, lib, java.nio.file.StandardCopyOption.ATOMIC_MOVE,
              java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } finally {
          Files.deleteIfExists(tmp);
        }
      }
      RocksDB.loadLibrary(List.of(dir.toString()));
    } catch (Exception | UnsatisfiedLinkError e) {
      RocksDB.loadLibrary();
    }
  }

  /** Loads RocksDB's native library (this class's initialisation does), for code that calls it directly. */
  static void loadNative() {
    // the static initialiser has run
  }

  /** How often a read-only open that failed in a way a writer's file replacement explains is tried again. */
  private static final int READ_ONLY_OPEN_RETRIES = 5;
  /** A reader's view younger than this counts as fresh: {@link #refresh} keeps it. */
  private static final long FRESH_NANOS = 200_000_000L;

  private final Path cacheDir;
  private final Path dbDir;
  private final boolean writable;
  private final List<AutoCloseable> options = new ArrayList<>();
  private final DBOptions dbOptions;
  private final ColumnFamilyOptions smallFamilies;
  private final ColumnFamilyOptions blobFamilies;
  /** The database as this store sees it; null for a reader of a directory that holds no database yet. */
  private volatile View view;
  /** Views a reader replaced with fresher ones ({@link #refresh}); cursors may still use them, so they close last. */
  private final List<View> retired = new ArrayList<>();
  /** When {@link #refresh} last opened {@link #view} ({@link System#nanoTime}); 0: never. */
  private volatile long refreshed;
  private final WriteOptions syncWrites;
  private final WriteOptions plainWrites;
  private final WriteOptions unloggedWrites;
  private final ReadOptions reads;
  private final ReadOptions scans;
  /** Set by an unlogged write, cleared by the atomic flush that makes it durable. */
  private volatile boolean unflushed;
  private final Set<Cursor> cursors = Collections.synchronizedSet(Collections.newSetFromMap(new IdentityHashMap<>()));
  private volatile boolean closed;

  /** One opened database: its handles by family (a reader may lack families a writer has not created yet). */
  private record View(RocksDB db, List<ColumnFamilyHandle> allHandles, Map<Cf, ColumnFamilyHandle> handles) {
    void close() {
      allHandles.forEach(ColumnFamilyHandle::close);
      try {
        db.closeE();
      } catch (RocksDBException e) {
        // the database is gone either way; its WAL makes what was written durable
      }
    }
  }

  private RocksDbStore(Path cacheDir, boolean writable) {
    this.cacheDir = cacheDir;
    this.writable = writable;
    // A reader of a cache whose repair was interrupted between its two renames reads the rebuilt
    // database until the next writer finishes the swap (DatabaseSwap).
    Path dbDir = writable ? cacheDir.resolve(DB_DIR) : DatabaseSwap.readableDatabase(cacheDir);
    this.dbDir = dbDir;
    try {
      LRUCache blockCache = own(new LRUCache(64L << 20));
      BloomFilter bloom = own(new BloomFilter(10));
      BlockBasedTableConfig table = new BlockBasedTableConfig().setBlockCache(blockCache).setFilterPolicy(bloom)
          .setCacheIndexAndFilterBlocks(false);
      smallFamilies = own(new ColumnFamilyOptions().setTableFormatConfig(table)
          .setWriteBufferSize(writeBuffer(16L << 20)).setCompressionType(CompressionType.LZ4_COMPRESSION));
      blobFamilies = own(new ColumnFamilyOptions().setTableFormatConfig(table)
          .setWriteBufferSize(writeBuffer(256L << 20)).setMaxWriteBufferNumber(3)
          .setEnableBlobFiles(true).setMinBlobSize(MIN_BLOB_BYTES).setBlobFileSize(256L << 20)
          .setBlobCompressionType(CompressionType.NO_COMPRESSION)
          .setEnableBlobGarbageCollection(true).setBlobGarbageCollectionAgeCutoff(BLOB_GC_AGE_CUTOFF));
      dbOptions = own(new DBOptions().setCreateIfMissing(writable).setCreateMissingColumnFamilies(writable)
          .setMaxBackgroundJobs(2).setKeepLogFileNum(2).setInfoLogLevel(InfoLogLevel.WARN_LEVEL)
          .setMaxTotalWalSize(256L << 20)
          // Bulk writes (imports) skip the write-ahead log. Flushing every family together, at the
          // same point of the write sequence, keeps what a crash leaves consistent across families.
          .setAtomicFlush(true));
      if (!writable) {
        // Every table file is opened now: a writer that deletes one later (compaction) does not hurt this reader.
        dbOptions.setMaxOpenFiles(-1);
      }
      syncWrites = own(new WriteOptions().setSync(true));
      plainWrites = own(new WriteOptions());
      unloggedWrites = own(new WriteOptions().setDisableWAL(true));
      reads = own(new ReadOptions().setVerifyChecksums(true));
      // Whole-family scans (ls, stat, verify, prune): read ahead, and do not evict lookups' blocks.
      scans = own(new ReadOptions().setVerifyChecksums(true).setReadaheadSize(2L << 20).setFillCache(false));
      if (writable) {
        Files.createDirectories(dbDir);
        requireCurrentFile(dbDir);
        view = openView(dbDir);
      } else if (!Files.exists(cacheDir) || Files.isDirectory(cacheDir)) {
        view = openReadOnlyView(dbDir);
      } else {
        throw new IOException("not a directory");
      }
    } catch (RocksDBException e) {
      closeOptions();
      throw openFailure(cacheDir, e);
    } catch (IOException e) {
      closeOptions();
      throw ioFailure(cacheDir, "cannot open the database", e);
    } catch (RuntimeException e) {
      closeOptions();
      throw e;
    }
  }

  /**
   * Opens the database: as its primary for a writer, with {@code openReadOnly} for a reader (never
   * as a secondary instance: those miss what a writer's compactions and unflushed log hold). A
   * reader of a directory with no database gets null and creates nothing.
   */
  private View openView(Path dbDir) throws RocksDBException {
    if (!writable && !Files.exists(dbDir.resolve("CURRENT"))) {
      if (holdsData(dbDir)) {
        throw new RocksDBException("its CURRENT file is missing", new Status(Status.Code.NotFound, Status.SubCode.None,
            "its CURRENT file is missing"));
      }
      return null;
    }
    String cut = ManifestTail.problem(dbDir);
    if (cut != null) { // RocksDB would open an older state silently, and a writer delete the newer files
      throw new RocksDBException(cut, new Status(Status.Code.Corruption, Status.SubCode.None, cut));
    }
    String dbPath = dbDir.toString();
    List<String> names = new ArrayList<>(List.of("default"));
    if (Files.exists(dbDir.resolve("CURRENT"))) {
      try (Options o = new Options()) {
        for (byte[] n : RocksDB.listColumnFamilies(o, dbPath)) {
          String s = new String(n, StandardCharsets.UTF_8);
          if (!names.contains(s)) {
            names.add(s); // including families a newer schema added: RocksDB must open them all
          }
        }
      }
    }
    for (Cf cf : Cf.values()) {
      if (!names.contains(cf.cfName) && writable) {
        names.add(cf.cfName);
      }
    }
    List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
    for (String n : names) {
      Cf cf = Cf.named(n);
      boolean isBlob = cf != null && cf.blobs;
      descriptors.add(new ColumnFamilyDescriptor(n.getBytes(StandardCharsets.UTF_8), isBlob ? blobFamilies : smallFamilies));
    }
    List<ColumnFamilyHandle> opened = new ArrayList<>();
    RocksDB db = writable ? RocksDB.open(dbOptions, dbPath, descriptors, opened)
        : RocksDB.openReadOnly(dbOptions, dbPath, descriptors, opened, false);
    Map<Cf, ColumnFamilyHandle> byCf = new EnumMap<>(Cf.class);
    for (int i = 0; i < names.size(); i++) {
      Cf cf = Cf.named(names.get(i));
      if (cf != null) {
        byCf.put(cf, opened.get(i));
      }
    }
    View v = new View(db, List.copyOf(opened), byCf);
    // A reader may meet a database whose first writer has not created every family yet: those read
    // as empty. Families of ours missing beside families of someone else's: not an xlac cache.
    boolean foreign = names.stream().anyMatch(n -> !n.equals("default") && Cf.named(n) == null);
    if (byCf.size() != Cf.values().length && (writable || foreign)) {
      v.close();
      throw new XlacException(ExitCode.ENVIRONMENT, "cache " + cacheDir + " is not an xlac cache (column families "
          + names + ")");
    }
    return v;
  }

  /**
   * A writer's check before opening: a database directory with table, blob or log files but no
   * CURRENT file is damaged, not new. RocksDB would create a new, empty database there (and then
   * delete every file of the old one as obsolete), or refuse because of the logs; neither must happen.
   */
  private void requireCurrentFile(Path dbDir) {
    if (!Files.exists(dbDir.resolve("CURRENT")) && holdsData(dbDir)) {
      throw new DamagedCacheException(cacheDir, "cannot open the database: its CURRENT file is missing", null);
    }
  }

  /** Whether a database directory holds files with data: tables, blob files, or a write-ahead log with something in it. */
  static boolean holdsData(Path dbDir) {
    try (var s = Files.list(dbDir)) {
      return s.anyMatch(p -> {
        String n = p.getFileName().toString();
        try {
          // A MANIFEST alone is a database whose creation was cut short: it held nothing yet.
          return n.endsWith(".sst") || n.endsWith(".blob") || (n.endsWith(".log") && Files.size(p) > 0);
        } catch (IOException e) {
          return true; // there, if unreadable
        }
      });
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * A reader's open. A writer replaces its MANIFEST and write-ahead log files as it goes, so a read
   * of them can fail for a moment; such a failure is tried again a few times before it is reported.
   */
  private View openReadOnlyView(Path dbDir) throws RocksDBException {
    for (int attempt = 0; ; attempt++) {
      try {
        return openView(dbDir);
      } catch (RocksDBException e) {
        if (attempt >= READ_ONLY_OPEN_RETRIES || !looksTransient(e)) {
          throw e;
        }
        try {
          Thread.sleep(10L << attempt);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw e;
        }
      }
    }
  }

  /** A failed read-only open that a writer replacing files explains (a file gone, a log read mid-write). */
  private static boolean looksTransient(RocksDBException e) {
    Status s = e.getStatus();
    Status.Code code = s == null ? null : s.getCode();
    return code == Status.Code.IOError || code == Status.Code.NotFound || code == Status.Code.Corruption
        || isMissingFile(e);
  }

  /**
   * For a reader: replaces its view with a freshly opened one, so later reads see what the writer
   * has committed since (and the files it has since written instead of the ones it deleted). The old
   * view stays open for the cursors still using it. Returns false when the fresh open failed or
   * there is still no database; the old view is then kept.
   */
  synchronized boolean refresh() {
    checkOpen();
    if (writable) {
      return false;
    }
    if (refreshed != 0 && System.nanoTime() - refreshed < FRESH_NANOS) {
      return true; // just opened: a run of damaged reads (verify of a damaged cache) reopens once, not per value
    }
    View fresh;
    try {
      fresh = openReadOnlyView(dbDir);
    } catch (RocksDBException | RuntimeException e) {
      return false;
    }
    if (fresh == null) {
      return false;
    }
    View old = view;
    view = fresh;
    refreshed = System.nanoTime() | 1;
    if (old != null) {
      retired.add(old);
    }
    return true;
  }

  boolean readOnly() {
    return !writable;
  }

  /**
   * How large a bulk write batch should grow: a quarter of a blob family's memtable, so a few
   * batches fill one and flushes keep pace with the writer.
   */
  static long bulkBatchBytes() {
    return writeBuffer(256L << 20) / 4;
  }

  private static long writeBuffer(long bytes) {
    return writeBufferBytesForTests > 0 ? writeBufferBytesForTests : bytes;
  }

  static RocksDbStore open(Path cacheDir, boolean writable) {
    return new RocksDbStore(cacheDir, writable);
  }

  private <T extends AutoCloseable> T own(T t) {
    options.add(t);
    return t;
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("cache " + cacheDir + " is closed");
    }
  }

  /** The writer's database (a writable store always has one). */
  private View primary() {
    return view;
  }

  /**
   * The value, or null. A value RocksDB finds corrupt, or whose blob file is gone, is a
   * {@link DamagedValueException}.
   */
  byte[] get(Cf cf, byte[] key) {
    checkOpen();
    View v = view;
    ColumnFamilyHandle h = v == null ? null : v.handles().get(cf);
    if (h == null) {
      return null;
    }
    try {
      return v.db().get(h, reads, key);
    } catch (RocksDBException e) {
      throw cf.blobs ? readFailure(cf, e) : recordFailure(cf, e);
    }
  }

  /**
   * Reads the value of {@code key} (from its position to its limit) with its checksums verified, and
   * copies as much of it as fits into {@code value} (from its position): RocksDB reads and checks the
   * whole value whatever fits. Returns the value's full length, or -1 when there is none.
   */
  int get(Cf cf, ByteBuffer key, ByteBuffer value) {
    checkOpen();
    View v = view;
    ColumnFamilyHandle h = v == null ? null : v.handles().get(cf);
    if (h == null) {
      return -1;
    }
    try {
      int n = v.db().get(h, reads, key, value);
      return n == RocksDB.NOT_FOUND ? -1 : n;
    } catch (RocksDBException e) {
      throw readFailure(cf, e);
    }
  }

  /**
   * A record (not a value) that cannot be read because a table block is damaged: the cache is
   * damaged as a whole, as for a failed open ({@code verify --repair} rebuilds it).
   */
  private RuntimeException recordFailure(Cf cf, RocksDBException e) {
    if (isCorruption(e) || isMissingFile(e)) {
      return new DamagedCacheException(cacheDir, "a damaged block in its " + cf.cfName + " records: " + e.getMessage(), e);
    }
    return failure(cacheDir, "cannot read from " + cf.cfName, e);
  }

  private RuntimeException readFailure(Cf cf, RocksDBException e) {
    if (isCorruption(e)) {
      return new DamagedValueException(e.getMessage(), false);
    }
    if (isMissingFile(e)) {
      return new DamagedValueException(e.getMessage(), true);
    }
    return failure(cacheDir, "cannot read from " + cf.cfName, e);
  }

  void write(WriteBatch batch, boolean sync) {
    checkOpen();
    if (unflushed) {
      // Recovery replays the log on top of what was flushed: a logged batch must not reach the log
      // while unlogged batches written before it exist only in memory.
      flushAll();
    }
    try {
      primary().db().write(sync ? syncWrites : plainWrites, batch);
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot write", e);
    }
  }

  /**
   * Writes a batch without the write-ahead log, for bulk writes that would otherwise write every
   * byte twice. It is durable only after {@link #flushAll()}. A process killed before that loses it
   * and the unlogged batches after it, never part of a batch: flushes are atomic across families.
   */
  void writeUnlogged(WriteBatch batch) {
    checkOpen();
    unflushed = true;
    try {
      primary().db().write(unloggedWrites, batch);
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot write", e);
    }
  }

  /** Flushes every family's memtables in one atomic flush and waits for it: the data is then in synced files. */
  void flushAll() {
    checkOpen();
    if (!writable) {
      return;
    }
    try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
      primary().db().flush(flush, primary().allHandles());
      unflushed = false;
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot flush", e);
    }
  }

  void put(WriteBatch b, Cf cf, byte[] key, byte[] value) {
    try {
      b.put(handle(cf), key, value);
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot build a write batch", e);
    }
  }

  void delete(WriteBatch b, Cf cf, byte[] key) {
    try {
      b.delete(handle(cf), key);
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot build a write batch", e);
    }
  }

  void deleteAll(WriteBatch b, Cf cf) {
    try {
      byte[] end = new byte[128]; // longer than any key, all 0xff: above every key of ours
      java.util.Arrays.fill(end, (byte) 0xff);
      b.deleteRange(handle(cf), new byte[0], end);
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot build a write batch", e);
    }
  }

  /** Deletes the keys from {@code from} (included) to {@code to} (excluded). */
  void deleteRange(WriteBatch b, Cf cf, byte[] from, byte[] to) {
    try {
      b.deleteRange(handle(cf), from, to);
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot build a write batch", e);
    }
  }

  /** A writer's handle of {@code cf}, for building write batches. */
  private ColumnFamilyHandle handle(Cf cf) {
    if (!writable) {
      throw new IllegalStateException("cache " + cacheDir + " is open read-only");
    }
    return primary().handles().get(cf);
  }

  void syncWal() {
    checkOpen();
    if (!writable) {
      return;
    }
    try {
      primary().db().syncWal();
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot sync the write-ahead log", e);
    }
  }

  /** A tracked iterator positioned at {@code from} (null: the first key). */
  Cursor cursor(Cf cf, byte[] from) {
    checkOpen();
    View v = view;
    ColumnFamilyHandle h = v == null ? null : v.handles().get(cf);
    if (h == null) {
      return new Cursor(null, cf.cfName); // no database, or a family its writer has not created yet: empty
    }
    Cursor c = new Cursor(v.db().newIterator(h, from == null ? scans : reads), cf.cfName);
    cursors.add(c);
    if (from == null) {
      c.it.seekToFirst();
    } else {
      c.it.seek(from);
    }
    return c;
  }

  /** Iterator over a column family; {@link #close()} it (try-with-resources). */
  final class Cursor implements AutoCloseable {
    private final RocksIterator it;
    private final String family;

    private Cursor(RocksIterator it, String family) {
      this.it = it;
      this.family = family;
    }

    boolean valid() {
      if (it == null) {
        return false;
      }
      if (it.isValid()) {
        return true;
      }
      try {
        it.status();
      } catch (RocksDBException e) {
        if (isCorruption(e) || isMissingFile(e)) {
          throw new DamagedCacheException(cacheDir, "a scan of its " + family + " meets a damaged block: "
              + e.getMessage(), e);
        }
        throw failure(cacheDir, "cannot iterate", e);
      }
      return false;
    }

    byte[] key() {
      return it.key();
    }

    byte[] value() {
      return it.value();
    }

    void next() {
      it.next();
    }

    @Override
    public void close() {
      if (it != null && cursors.remove(this)) {
        it.close();
      }
    }
  }

  /** Flushes and compacts every family, with blob garbage collection forced, so deleted data leaves the disk. */
  void compactAll() {
    checkOpen();
    if (!writable) {
      return;
    }
    try (FlushOptions flush = new FlushOptions().setWaitForFlush(true);
        CompactRangeOptions compact = new CompactRangeOptions().setExclusiveManualCompaction(true)
            .setBottommostLevelCompaction(CompactRangeOptions.BottommostLevelCompaction.kForceOptimized)) {
      RocksDB db = primary().db();
      db.flush(flush, primary().allHandles());
      for (Cf cf : Cf.values()) {
        ColumnFamilyHandle h = primary().handles().get(cf);
        if (cf.blobs) {
          db.setOptions(h, MutableColumnFamilyOptions.builder().setBlobGarbageCollectionAgeCutoff(1.0).build());
        }
        try {
          db.compactRange(h, null, null, compact);
        } finally {
          if (cf.blobs) {
            db.setOptions(h, MutableColumnFamilyOptions.builder()
                .setBlobGarbageCollectionAgeCutoff(BLOB_GC_AGE_CUTOFF).build());
          }
        }
      }
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot compact", e);
    }
  }

  /** The database directory this store opened. */
  Path databaseDir() {
    return dbDir;
  }

  /**
   * The id of a family's column family: what RocksDB writes into the header of each of its blob
   * files. -1 when the database has no such family.
   */
  int familyId(Cf cf) {
    View v = view;
    ColumnFamilyHandle h = v == null ? null : v.handles().get(cf);
    return h == null ? -1 : h.getID();
  }

  /**
   * Reads every block of every table file and checks its checksum (blob files are not read). A
   * damaged block is a {@link DamagedValueException} naming the file.
   */
  void verifyTables() {
    checkOpen();
    View v = view;
    if (v == null) {
      return;
    }
    try {
      v.db().verifyChecksum();
    } catch (RocksDBException e) {
      if (isCorruption(e) || isMissingFile(e)) {
        throw new DamagedValueException(e.getMessage(), isMissingFile(e));
      }
      throw failure(cacheDir, "cannot check the table files", e);
    }
  }

  /** The names of the files the database uses now (tables, blob files, MANIFEST, ...), as RocksDB lists them. */
  List<String> liveFiles() {
    checkOpen();
    View v = view;
    if (v == null) {
      return List.of();
    }
    try {
      return v.db().getLiveFiles(false).files.stream().map(n -> n.startsWith("/") ? n.substring(1) : n).toList();
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot list the database's files", e);
    }
  }

  /**
   * Flushes and compacts every family down to its last level, without forcing blob garbage
   * collection: what is deleted or overwritten leaves the tables, and a blob file none of whose
   * values is referenced any more is deleted, but no live value is moved. A damaged block in a
   * table met on the way fails it (RocksDB then reports corruption).
   */
  void compactTables() {
    checkOpen();
    if (!writable) {
      return;
    }
    try (FlushOptions flush = new FlushOptions().setWaitForFlush(true);
        CompactRangeOptions compact = new CompactRangeOptions().setExclusiveManualCompaction(true)
            .setBottommostLevelCompaction(CompactRangeOptions.BottommostLevelCompaction.kForceOptimized)) {
      RocksDB db = primary().db();
      db.flush(flush, primary().allHandles());
      for (Cf cf : Cf.values()) {
        db.compactRange(primary().handles().get(cf), null, null, compact);
      }
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot compact", e);
    }
  }

  /** Bytes the database occupies on disk. */
  long diskUsage() {
    if (!Files.isDirectory(cacheDir.resolve(DB_DIR))) {
      return 0;
    }
    long[] total = {0};
    try {
      Files.walkFileTree(cacheDir.resolve(DB_DIR), new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
          total[0] += attrs.size();
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFileFailed(Path file, IOException exc) {
          return FileVisitResult.CONTINUE; // deleted by compaction while we walked
        }
      });
    } catch (IOException e) {
      return -1;
    }
    return total[0];
  }

  /**
   * Why the database cannot be opened. Damage to its files (RocksDB reports corruption, a file it
   * lists is gone, CURRENT or the MANIFEST is unreadable) is a {@link DamagedCacheException}, which
   * {@code verify --repair} fixes; anything else (a full disk, permissions, a lock) is not.
   */
  static XlacException openFailure(Path cacheDir, RocksDBException e) {
    String msg = e.getMessage() == null ? String.valueOf(e.getStatus()) : e.getMessage();
    Status s = e.getStatus();
    Status.Code code = s == null ? null : s.getCode();
    boolean damage = !isDiskFull(msg) && (code == Status.Code.Corruption || code == Status.Code.NotFound || isMissingFile(e)
        || (code == Status.Code.InvalidArgument && msg.contains("existing log file")));
    if (!damage) {
      return failure(cacheDir, "cannot open the database", e);
    }
    // RocksDB's own advice ("The file ... may be corrupted.") would be a second one; ours is verify --repair.
    String reason = msg.replaceAll("\\s+The file \\S+ may be corrupted\\.?", "").strip();
    return new DamagedCacheException(cacheDir, "cannot open the database: " + reason, e);
  }

  static boolean isCorruption(RocksDBException e) {
    Status s = e.getStatus();
    return s != null && s.getCode() == Status.Code.Corruption;
  }

  static XlacException failure(Path cacheDir, String what, RocksDBException e) {
    String msg = e.getMessage() == null ? String.valueOf(e.getStatus()) : e.getMessage();
    if (isDiskFull(msg)) {
      return new XlacException(ExitCode.ENVIRONMENT, "cache " + cacheDir + ": disk full (" + msg + ")", e);
    }
    if (msg.contains("lock") && msg.contains("LOCK")) {
      return new XlacException(ExitCode.ENVIRONMENT, "cache " + cacheDir + " is in use by another process (" + msg
          + ")", e);
    }
    if (isCorruption(e)) {
      return new DamagedCacheException(cacheDir, what + ": " + msg, e);
    }
    return new XlacException(ExitCode.ENVIRONMENT, "cache " + cacheDir + ": " + what + ": " + msg, e);
  }

  static XlacException ioFailure(Path cacheDir, String what, IOException e) {
    String msg = XlacException.reason(e);
    if (isDiskFull(msg)) {
      return new XlacException(ExitCode.ENVIRONMENT, "cache " + cacheDir + ": disk full (" + what + ": " + msg + ")", e);
    }
    return new XlacException(ExitCode.ENVIRONMENT, "cache " + cacheDir + ": " + what + ": " + msg, e);
  }

  /** An I/O error for a file that is not there: a blob file deleted from under a value, or by a writer's compaction. */
  static boolean isMissingFile(RocksDBException e) {
    Status s = e.getStatus();
    String msg = e.getMessage();
    return s != null && (s.getCode() == Status.Code.IOError || s.getCode() == Status.Code.NotFound)
        && msg != null && msg.contains("No such file");
  }

  /** Whether {@code msg} (RocksDB's, or a {@link XlacException#reason} in lower case) reports a full disk. */
  static boolean isDiskFull(String msg) {
    String m = msg == null ? "" : msg.toLowerCase(java.util.Locale.ROOT);
    return m.contains("no space left") || m.contains("file too large") || m.contains("disk quota exceeded");
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<Cursor> open;
    synchronized (cursors) {
      open = new ArrayList<>(cursors);
    }
    open.forEach(Cursor::close);
    View v = view;
    view = null;
    if (v != null) {
      RocksDB db = v.db();
      if (writable) {
        // RocksDB does not flush at close what its write-ahead log holds; every later open (each
        // reader's too) would replay it. Flush, so the next command opens quickly.
        try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
          db.flush(flush, v.allHandles());
        } catch (RocksDBException e) {
          // the log still holds what was logged, and the next open replays it; unlogged writes
          // not flushed by now are lost whole (see writeUnlogged)
        }
        db.cancelAllBackgroundWork(true);
      }
      v.close();
    }
    synchronized (this) {
      retired.forEach(View::close);
      retired.clear();
    }
    closeOptions();
  }

  private void closeOptions() {
    for (int i = options.size() - 1; i >= 0; i--) {
      try {
        options.get(i).close();
      } catch (Exception e) {
        // native option objects do not fail to close
      }
    }
    options.clear();
  }

  /** A value RocksDB itself found corrupt (block or blob checksum), or whose blob file is gone ({@code fileMissing}). */
  static final class DamagedValueException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final boolean fileMissing;

    DamagedValueException(String message, boolean fileMissing) {
      super(message);
      this.fileMissing = fileMissing;
    }
  }
}
