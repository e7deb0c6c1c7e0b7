package dev.xlac.cache;

import dev.xlac.core.FileTrees;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.io.IOException;
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
 * <p>A writable store opens the database as RocksDB's primary; a read-only one opens it as a
 * secondary instance, which works while a writer holds the primary and sees the state of the
 * moment it was opened (or last caught up).
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

  private final Path cacheDir;
  private final boolean writable;
  private final Path secondaryDir;
  private final List<AutoCloseable> options = new ArrayList<>();
  private final List<ColumnFamilyHandle> allHandles;
  private final Map<Cf, ColumnFamilyHandle> handles = new EnumMap<>(Cf.class);
  private final RocksDB db;
  private final WriteOptions syncWrites;
  private final WriteOptions plainWrites;
  private final WriteOptions unloggedWrites;
  private final ReadOptions reads;
  private final ReadOptions scans;
  /** Set by an unlogged write, cleared by the atomic flush that makes it durable. */
  private volatile boolean unflushed;
  private final Set<Cursor> cursors = Collections.synchronizedSet(Collections.newSetFromMap(new IdentityHashMap<>()));
  private volatile boolean closed;

  private RocksDbStore(Path cacheDir, boolean writable) {
    this.cacheDir = cacheDir;
    this.writable = writable;
    Path dbDir = cacheDir.resolve(DB_DIR);
    String dbPath = dbDir.toString();
    try {
      LRUCache blockCache = own(new LRUCache(64L << 20));
      BloomFilter bloom = own(new BloomFilter(10));
      BlockBasedTableConfig table = new BlockBasedTableConfig().setBlockCache(blockCache).setFilterPolicy(bloom)
          .setCacheIndexAndFilterBlocks(false);
      ColumnFamilyOptions small = own(new ColumnFamilyOptions().setTableFormatConfig(table)
          .setWriteBufferSize(writeBuffer(16L << 20)).setCompressionType(CompressionType.LZ4_COMPRESSION));
      ColumnFamilyOptions blobs = own(new ColumnFamilyOptions().setTableFormatConfig(table)
          .setWriteBufferSize(writeBuffer(256L << 20)).setMaxWriteBufferNumber(3)
          .setEnableBlobFiles(true).setMinBlobSize(MIN_BLOB_BYTES).setBlobFileSize(256L << 20)
          .setBlobCompressionType(CompressionType.NO_COMPRESSION)
          .setEnableBlobGarbageCollection(true).setBlobGarbageCollectionAgeCutoff(BLOB_GC_AGE_CUTOFF));
      DBOptions dbOptions = own(new DBOptions().setCreateIfMissing(writable).setCreateMissingColumnFamilies(writable)
          .setMaxBackgroundJobs(2).setKeepLogFileNum(2).setInfoLogLevel(InfoLogLevel.WARN_LEVEL)
          .setMaxTotalWalSize(256L << 20)
          // Bulk writes (imports) skip the write-ahead log. Flushing every family together, at the
          // same point of the write sequence, keeps what a crash leaves consistent across families.
          .setAtomicFlush(true));
      if (!writable) {
        dbOptions.setMaxOpenFiles(-1); // a secondary must keep every file open: the primary may delete them
      }
      syncWrites = own(new WriteOptions().setSync(true));
      plainWrites = own(new WriteOptions());
      unloggedWrites = own(new WriteOptions().setDisableWAL(true));
      reads = own(new ReadOptions().setVerifyChecksums(true));
      // Whole-family scans (ls, stat, verify, prune): read ahead, and do not evict lookups' blocks.
      scans = own(new ReadOptions().setVerifyChecksums(true).setReadaheadSize(2L << 20).setFillCache(false));

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
        descriptors.add(new ColumnFamilyDescriptor(n.getBytes(StandardCharsets.UTF_8), isBlob ? blobs : small));
      }
      List<ColumnFamilyHandle> opened = new ArrayList<>();
      if (writable) {
        Files.createDirectories(dbDir);
        secondaryDir = null;
        this.db = RocksDB.open(dbOptions, dbPath, descriptors, opened);
      } else {
        secondaryDir = Files.createTempDirectory("xlac-cache-reader-");
        this.db = RocksDB.openAsSecondary(dbOptions, dbPath, secondaryDir.toString(), descriptors, opened);
        this.db.tryCatchUpWithPrimary();
      }
      allHandles = List.copyOf(opened);
      for (int i = 0; i < names.size(); i++) {
        Cf cf = Cf.named(names.get(i));
        if (cf != null) {
          handles.put(cf, opened.get(i));
        }
      }
      if (handles.size() != Cf.values().length) {
        close();
        throw new XlacException(ExitCode.ENVIRONMENT, "cache " + cacheDir + " is not an xlac cache (column families "
            + names + ")");
      }
    } catch (RocksDBException e) {
      closeOptions();
      throw failure(cacheDir, "cannot open the database", e);
    } catch (IOException e) {
      closeOptions();
      throw ioFailure(cacheDir, "cannot open the database", e);
    }
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

  static boolean exists(Path cacheDir) {
    return Files.exists(cacheDir.resolve(DB_DIR).resolve("CURRENT"));
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

  /** The value, or null. A value RocksDB finds corrupt is a {@link DamagedValueException}. */
  byte[] get(Cf cf, byte[] key) {
    checkOpen();
    try {
      return db.get(handles.get(cf), reads, key);
    } catch (RocksDBException e) {
      if (isCorruption(e)) {
        throw new DamagedValueException(e.getMessage());
      }
      throw failure(cacheDir, "cannot read from " + cf.cfName, e);
    }
  }

  void write(WriteBatch batch, boolean sync) {
    checkOpen();
    if (unflushed) {
      // Recovery replays the log on top of what was flushed: a logged batch must not reach the log
      // while unlogged batches written before it exist only in memory.
      flushAll();
    }
    try {
      db.write(sync ? syncWrites : plainWrites, batch);
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
      db.write(unloggedWrites, batch);
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
      db.flush(flush, allHandles);
      unflushed = false;
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot flush", e);
    }
  }

  void put(WriteBatch b, Cf cf, byte[] key, byte[] value) {
    try {
      b.put(handles.get(cf), key, value);
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot build a write batch", e);
    }
  }

  void delete(WriteBatch b, Cf cf, byte[] key) {
    try {
      b.delete(handles.get(cf), key);
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot build a write batch", e);
    }
  }

  void deleteAll(WriteBatch b, Cf cf) {
    try {
      byte[] end = new byte[128]; // longer than any key, all 0xff: above every key of ours
      java.util.Arrays.fill(end, (byte) 0xff);
      b.deleteRange(handles.get(cf), new byte[0], end);
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot build a write batch", e);
    }
  }

  void syncWal() {
    checkOpen();
    if (!writable) {
      return;
    }
    try {
      db.syncWal();
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot sync the write-ahead log", e);
    }
  }

  /** A tracked iterator positioned at {@code from} (null: the first key). */
  Cursor cursor(Cf cf, byte[] from) {
    checkOpen();
    Cursor c = new Cursor(db.newIterator(handles.get(cf), from == null ? scans : reads));
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

    private Cursor(RocksIterator it) {
      this.it = it;
    }

    boolean valid() {
      if (it.isValid()) {
        return true;
      }
      try {
        it.status();
      } catch (RocksDBException e) {
        if (isCorruption(e)) {
          throw new DamagedValueException(e.getMessage());
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
      if (cursors.remove(this)) {
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
      db.flush(flush, allHandles);
      for (Cf cf : Cf.values()) {
        ColumnFamilyHandle h = handles.get(cf);
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

  /** Bytes the database occupies on disk. */
  long diskUsage() {
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
      return new XlacException(ExitCode.WORK_FAILED, "cache " + cacheDir + " is damaged: " + what + ": " + msg
          + "; run 'xlac cache verify --repair'", e);
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
    if (db != null) {
      if (writable) {
        // RocksDB does not flush at close what its write-ahead log holds; every later open (each
        // reader's too) would replay it. Flush, so the next command opens quickly.
        try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
          db.flush(flush, allHandles);
        } catch (RocksDBException e) {
          // the log still holds what was logged, and the next open replays it; unlogged writes
          // not flushed by now are lost whole (see writeUnlogged)
        }
        db.cancelAllBackgroundWork(true);
      }
      allHandles.forEach(ColumnFamilyHandle::close);
      try {
        db.closeE();
      } catch (RocksDBException e) {
        // the database is gone either way; its WAL makes what was written durable
      }
    }
    closeOptions();
    if (secondaryDir != null) {
      deleteTree(secondaryDir);
    }
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

  static void deleteTree(Path dir) {
    try {
      FileTrees.deleteTree(dir);
    } catch (IOException e) {
      // best effort: a leftover secondary directory costs disk, not correctness
    }
  }

  /** A value RocksDB itself found corrupt (block or blob checksum). */
  static final class DamagedValueException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    DamagedValueException(String message) {
      super(message);
    }
  }
}
