package dev.xlac.cache.store;

import dev.xlac.cache.DamagedCacheException;
import dev.xlac.cache.DiskFullException;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.core.io.FileTrees;
import dev.xlac.core.io.PrivateFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * <p>A full disk never jams a writer (see {@link DiskReserve}): opening never flushes
 * ({@code avoid_flush_during_recovery}), so it needs almost no space; the data not yet flushed is
 * kept below the size of the disk reserve ({@link Buffers}), so one flush always fits into a
 * released reserve; and a write, flush or open that finds the disk full releases the reserve, reopens
 * the database (RocksDB stops writing after such an error, and its Java API cannot resume it) and
 * reports "disk full", whatever words RocksDB used. {@link #replaceWithFresh} swaps in an empty
 * database through renames ({@code cache clear}), and {@link #compactAll} compacts without rewriting
 * blob files when there is no room for their live data.
 *
 * <p>A writable store opens the database as RocksDB's primary; a read-only one with RocksDB's
 * {@code openReadOnly}, which writes nothing, works while a writer holds the primary, and sees what
 * that writer had committed when it was opened (its flushed files and its write-ahead log). A
 * reader keeps every table file open, and can {@link #refresh} its view when a blob file it needs
 * has been collected by the writer since. A reader of a directory without a database creates none
 * and reads as empty.
 */
public final class RocksDbStore implements AutoCloseable {
  public enum Cf {
    META("meta", false),
    GRAPHS("graphs", true),
    GRAPH_META("graph_meta", false),
    ARTIFACTS("artifacts", true),
    ARTIFACT_META("artifact_meta", false),
    LOGS("logs", true),
    IDENTITIES("identities", false),
    ACCESS("access_index", false),
    // Schema version 4: the runtime's recorded PJRT compile requests and their executables. Added
    // last, so the families of older caches keep their ids (a repair's blob file scan maps ids by creation order).
    REQUESTS("requests", true),
    REQUEST_META("request_meta", false),
    EXECUTABLES("executables", true);

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

  public static final String DB_DIR = "db";
  /** Values of at least this size go to blob files, so compaction does not rewrite artifacts. */
  static final long MIN_BLOB_BYTES = 16 << 10;
  private static final double BLOB_GC_AGE_CUTOFF = 0.25;
  /**
   * Tests only (fault tests in child JVMs): when positive, every family's memtable size, so that
   * flushes happen every few entries rather than every few MB.
   */
  static long writeBufferBytesForTests = 0;

  /**
   * How much data the database keeps unflushed, from the size of the disk reserve R: all of it, in
   * the memtables being filled and those being flushed, and in the write-ahead log, stays below R/2
   * (plus the batch being written), so that after a full disk one flush fits into the released
   * reserve with room to spare for the new MANIFEST, OPTIONS and log files of the reopen. With the
   * 64 MiB reserve of any file system over 1.25 GiB: 16 MiB of memtables in all (RocksDB's write
   * buffer manager flushes when they reach it), as much again while they are flushed, a 16 MiB
   * write-ahead log.
   *
   * @param total {@code db_write_buffer_size}: every family's memtables together
   * @param blobFamily the memtable size of a family whose values go to blob files
   * @param smallFamily the memtable size of a family of small records
   * @param wal {@code max_total_wal_size}
   */
  record Buffers(long total, long blobFamily, long smallFamily, long wal) {
    static Buffers forReserve(long reserveBytes) {
      long unflushed = reserveBytes / 2;
      long half = unflushed / 2;
      long blob = writeBufferBytesForTests > 0 ? writeBufferBytesForTests : half;
      long small = writeBufferBytesForTests > 0 ? writeBufferBytesForTests
          : Math.max(64L << 10, Math.min(16L << 20, unflushed / 8));
      return new Buffers(half, blob, small, half);
    }
  }

  static {
    loadNativeLibrary();
  }

  /**
   * RocksDB's own loader unpacks its 17 MB library into a new temporary file at every start (about
   * 0.1 s, on every command). Unpack it once into a directory only this user can write, named after
   * the RocksDB jar, and load it from there; on any doubt, fall back to RocksDB's loader.
   */
  private static void loadNativeLibrary() {
    presetLibc();
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
        try (var in = c.getInputStream()) {
          AtomicFiles.write(lib, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"), out -> {
            in.transferTo(out);
            return true;
          });
        }
      }
      RocksDB.loadLibrary(List.of(dir.toString()));
    } catch (Exception | UnsatisfiedLinkError e) {
      RocksDB.loadLibrary();
    }
  }

  /**
   * RocksDB's loader picks its glibc or its musl library by asking a shell {@code ldd /usr/bin/env | grep -q musl}
   * (three processes, about 0.02 s of every cache command) unless {@code $ROCKSDB_MUSL_LIBC} says. The C library this
   * JVM itself runs on, which is the one the library must link against, is in {@code /proc/self/maps}: tell RocksDB's
   * loader that instead (its {@code Environment.MUSL_LIBC}, the answer it keeps). When the variable says true or false,
   * the maps name neither library, or the field is not there (another rocksdbjni), RocksDB decides as before.
   */
  private static void presetLibc() {
    String told = System.getenv("ROCKSDB_MUSL_LIBC");
    if ("true".equalsIgnoreCase(told) || "false".equalsIgnoreCase(told)) { // what RocksDB's loader honours
      return;
    }
    try {
      Boolean musl = muslFromMaps(Files.readAllLines(Path.of("/proc/self/maps"), StandardCharsets.ISO_8859_1));
      if (musl == null) {
        return;
      }
      java.lang.reflect.Field known = org.rocksdb.util.Environment.class.getDeclaredField("MUSL_LIBC");
      known.setAccessible(true);
      if (known.getType() == Boolean.class && known.get(null) == null) {
        known.set(null, musl);
      }
    } catch (IOException | ReflectiveOperationException | RuntimeException e) {
      // RocksDB's own check decides
    }
  }

  /**
   * Whether the process whose {@code /proc/PID/maps} lines are given runs on musl (its dynamic loader or C library
   * mapped: {@code ld-musl-*.so.1}, {@code libc.musl-*.so.1}), on glibc ({@code libc.so.6}), or null when the lines
   * name neither.
   */
  static Boolean muslFromMaps(List<String> mapsLines) {
    Boolean glibc = null;
    for (String line : mapsLines) {
      int slash = line.lastIndexOf('/');
      if (slash < 0) {
        continue;
      }
      String name = line.substring(slash + 1);
      if (name.startsWith("ld-musl-") || name.startsWith("libc.musl-")) {
        return true;
      }
      if (name.equals("libc.so.6") || name.startsWith("libc-2.") && name.endsWith(".so")) {
        glibc = false;
      }
    }
    return glibc;
  }

  /** Loads RocksDB's native library (this class's initialisation does), for code that calls it directly. */
  public static void loadNative() {
    // the static initialiser has run
  }

  /** How often a read-only open that failed in a way a writer's file replacement explains is tried again. */
  private static final int READ_ONLY_OPEN_RETRIES = 5;
  /** A reader's view younger than this counts as fresh: {@link #refresh} keeps it. */
  private static final long FRESH_NANOS = 200_000_000L;

  private final Path cacheDir;
  private final Path dbDir;
  private final boolean writable;
  /** The writer's disk reserve; null for a reader, which never writes. */
  private final DiskReserve reserve;
  /** Uses of the writer's database, which {@link #reopen} and {@link #replaceWithFresh} wait out. */
  private final Users users = new Users();
  /**
   * RocksDB's words for the full disk this database instance met (null: none yet). RocksDB stops
   * writing after it, and later errors of the same instance may only say "Writer has previous error"
   * or name a background error: they are the same full disk.
   */
  private volatile String diskFull;
  /** The full disk a {@link #reopen} has not yet got past (others were using the database); null: none. */
  private volatile XlacException reopenPending;
  /** Whether automatic blob garbage collection is on: see {@link #adjustBlobCollection}. */
  private volatile boolean blobCollection = true;
  /** Told after {@link #reopen} or {@link #replaceWithFresh}: whatever was read before may be stale. */
  private volatile Runnable reopened = () -> { };
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

  /** Up to this many table files, an open reads them all in its own thread ({@link #fileOpeningThreads}). */
  static final int TABLE_FILES_ONE_THREAD = 64;

  /**
   * {@code max_file_opening_threads}: an open reads every table file's footer and index (all of them, as
   * {@code max_open_files} is -1), and RocksDB starts this many threads less one for it in every column family, whether
   * the family has a file or not: with its default of 16, 180 threads in every command that opens the cache
   * (0.01-0.02 s on two cores; bench/README.md, "Start-up"). A cache of up to {@value #TABLE_FILES_ONE_THREAD} table
   * files is read in the opening thread; a bigger one with one thread per core, at least 2 and at most RocksDB's 16,
   * as its files may lie on a slow disk.
   */
  static int fileOpeningThreads(Path dbDir) {
    int tables = 0;
    try (var files = Files.newDirectoryStream(dbDir, "*.sst")) {
      for (Path ignored : files) {
        if (++tables > TABLE_FILES_ONE_THREAD) {
          return Math.clamp(Runtime.getRuntime().availableProcessors(), 2, 16);
        }
      }
    } catch (IOException | RuntimeException e) {
      // a new cache (no directory yet), or one RocksDB will say more about when it opens
    }
    return 1;
  }

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
    this.reserve = writable ? new DiskReserve(cacheDir) : null;
    // A reader of a cache whose repair or clear was interrupted between its two renames reads the
    // rebuilt database until the next writer finishes the swap (DatabaseSwap).
    Path dbDir = writable ? cacheDir.resolve(DB_DIR) : DatabaseSwap.readableDatabase(cacheDir);
    this.dbDir = dbDir;
    Buffers buffers = Buffers.forReserve(reserve == null ? DiskReserve.MAX_BYTES : reserve.target());
    try {
      LRUCache blockCache = own(new LRUCache(64L << 20));
      BloomFilter bloom = own(new BloomFilter(10));
      BlockBasedTableConfig table = new BlockBasedTableConfig().setBlockCache(blockCache).setFilterPolicy(bloom)
          .setCacheIndexAndFilterBlocks(false);
      smallFamilies = own(new ColumnFamilyOptions().setTableFormatConfig(table)
          .setWriteBufferSize(buffers.smallFamily()).setMaxWriteBufferNumber(2)
          .setCompressionType(CompressionType.LZ4_COMPRESSION));
      blobFamilies = own(new ColumnFamilyOptions().setTableFormatConfig(table)
          .setWriteBufferSize(buffers.blobFamily()).setMaxWriteBufferNumber(2)
          .setEnableBlobFiles(true).setMinBlobSize(MIN_BLOB_BYTES).setBlobFileSize(256L << 20)
          .setBlobCompressionType(CompressionType.NO_COMPRESSION)
          .setEnableBlobGarbageCollection(true).setBlobGarbageCollectionAgeCutoff(BLOB_GC_AGE_CUTOFF));
      dbOptions = own(new DBOptions().setCreateIfMissing(writable).setCreateMissingColumnFamilies(writable)
          .setMaxBackgroundJobs(2).setKeepLogFileNum(2).setInfoLogLevel(InfoLogLevel.WARN_LEVEL)
          .setDbWriteBufferSize(buffers.total()).setMaxTotalWalSize(buffers.wal())
          // Each open preallocates a new MANIFEST (4 MiB by default): keep it a small part of the reserve.
          .setManifestPreallocationSize(Math.min(4L << 20, Math.max(64L << 10, buffers.total() / 4)))
          // Opening replays the write-ahead log into memory and writes no table or blob file, so a
          // writer opens on a full disk (with the space a released reserve gives).
          .setAvoidFlushDuringRecovery(true)
          // close() flushes what should last; a database given up after a full disk writes nothing more.
          .setAvoidFlushDuringShutdown(true)
          // Bulk writes (imports) skip the write-ahead log. Flushing every family together, at the
          // same point of the write sequence, keeps what a crash leaves consistent across families.
          .setAtomicFlush(true)
          .setMaxFileOpeningThreads(fileOpeningThreads(dbDir)));
      if (!writable) {
        // Every table file is opened now: a writer that deletes one later (compaction) does not hurt this reader.
        dbOptions.setMaxOpenFiles(-1);
      }
      // No write waits inside RocksDB for a stall to end (see writeThrough): this class waits instead.
      syncWrites = own(new WriteOptions().setSync(true).setNoSlowdown(true));
      plainWrites = own(new WriteOptions().setNoSlowdown(true));
      unloggedWrites = own(new WriteOptions().setDisableWAL(true).setNoSlowdown(true));
      reads = own(new ReadOptions().setVerifyChecksums(true));
      // Whole-family scans (ls, stat, verify, prune): read ahead, and do not evict lookups' blocks.
      scans = own(new ReadOptions().setVerifyChecksums(true).setReadaheadSize(2L << 20).setFillCache(false));
      if (writable) {
        // (CacheStore has finished or undone, under the lock, a replacement a crash interrupted: DatabaseSwap.recover.)
        PrivateFiles.createDirectories(dbDir); // the cache directory too, when it is new
        requireCurrentFile(dbDir);
        view = openWriterView(dbDir);
        adjustBlobCollection(view);
      } else if (!Files.exists(cacheDir) || Files.isDirectory(cacheDir)) {
        view = openReadOnlyView(dbDir);
      } else {
        throw new IOException("not a directory");
      }
    } catch (RocksDBException e) {
      closeOptions();
      if (writable && meansDiskFull(e)) {
        throw diskFullException(diskFull != null ? diskFull : "cannot open the database: " + message(e), 0);
      }
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
   * A writer's open. Opening flushes nothing, but it writes a new MANIFEST, OPTIONS file and log: on a
   * disk without that much room, the reserve is released and the open tried again.
   */
  private View openWriterView(Path dbDir) throws RocksDBException {
    // Compactions start as soon as the database opens: decide on blob collection before (the blob
    // files' size stands for their live data until the open tells; adjustBlobCollection refines it).
    blobCollection = roomFor(filesBytes(dbDir, ".blob") / 4);
    blobFamilies.setEnableBlobGarbageCollection(blobCollection);
    try {
      return openView(dbDir);
    } catch (RocksDBException e) {
      if (!meansDiskFull(e) || reserve.release() == 0) {
        throw e;
      }
      diskFull = null;
      return openView(dbDir);
    }
  }

  /** Bytes of the files in {@code dir} whose names end with {@code suffix}. */
  private static long filesBytes(Path dir, String suffix) {
    long total = 0;
    try (java.nio.file.DirectoryStream<Path> s = Files.newDirectoryStream(dir, "*" + suffix)) {
      for (Path p : s) {
        try {
          total += Files.size(p);
        } catch (IOException e) {
          // deleted meanwhile
        }
      }
    } catch (IOException e) {
      // no directory yet
    }
    return total;
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
    return Buffers.forReserve(DiskReserve.MAX_BYTES).blobFamily() / 4;
  }

  public static RocksDbStore open(Path cacheDir, boolean writable) {
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

  /**
   * The writer's database. A writable store has one, except after a full disk that even a reopen
   * could not get past: then every use says so.
   */
  private View primary() {
    View v = view;
    if (v == null) {
      XlacException pending = reopenPending;
      throw pending != null ? pending : new IllegalStateException("cache " + cacheDir + " has no open database");
    }
    return v;
  }

  /**
   * What reads go to: the writer's database (which must be open), or the reader's view, which is null while the
   * directory holds no database yet.
   */
  private View readView() {
    return writable ? primary() : view;
  }

  /** {@code cf}'s handle in {@code v}; null without a view, or for a family its writer has not created yet. */
  private static ColumnFamilyHandle handle(View v, Cf cf) {
    return v == null ? null : v.handles().get(cf);
  }

  /** The writer's disk reserve (null for a reader). */
  DiskReserve reserve() {
    return reserve;
  }

  /** Tells {@code r} after the database was reopened or replaced: records read before may be stale. */
  void onReopen(Runnable r) {
    reopened = r;
  }

  /**
   * The value, or null. A value RocksDB finds corrupt, or whose blob file is gone, is a
   * {@link DamagedValueException}.
   */
  public byte[] get(Cf cf, byte[] key) {
    checkOpen();
    users.enter();
    try {
      View v = readView();
      ColumnFamilyHandle h = handle(v, cf);
      if (h == null) {
        return null;
      }
      return v.db().get(h, reads, key);
    } catch (RocksDBException e) {
      throw cf.blobs ? readFailure(cf, e) : recordFailure(cf, e);
    } finally {
      users.exit();
    }
  }

  /**
   * Reads the value of {@code key} (from its position to its limit) with its checksums verified, and
   * copies as much of it as fits into {@code value} (from its position): RocksDB reads and checks the
   * whole value whatever fits. Returns the value's full length, or -1 when there is none.
   */
  int get(Cf cf, ByteBuffer key, ByteBuffer value) {
    checkOpen();
    users.enter();
    try {
      View v = readView();
      ColumnFamilyHandle h = handle(v, cf);
      if (h == null) {
        return -1;
      }
      int n = v.db().get(h, reads, key, value);
      return n == RocksDB.NOT_FOUND ? -1 : n;
    } catch (RocksDBException e) {
      throw readFailure(cf, e);
    } finally {
      users.exit();
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

  public void write(WriteBatch batch, boolean sync) {
    checkWritable();
    if (unflushed) {
      // Recovery replays the log on top of what was flushed: a logged batch must not reach the log
      // while unlogged batches written before it exist only in memory.
      flushAll();
    }
    writing("cannot write", () -> writeThrough(sync ? syncWrites : plainWrites, batch));
  }

  /**
   * Writes a batch without the write-ahead log, for bulk writes that would otherwise write every
   * byte twice. It is durable only after {@link #flushAll()}. A process killed before that loses it
   * and the unlogged batches after it, never part of a batch: flushes are atomic across families.
   */
  void writeUnlogged(WriteBatch batch) {
    checkWritable();
    writing("cannot write", () -> {
      unflushed = true;
      writeThrough(unloggedWrites, batch);
    });
  }

  /**
   * Flushes every family's memtables in one atomic flush and waits for it: the data is then in synced
   * files. Flushes never wait for a write stall to end first ({@code allow_write_stall}): waiting in
   * RocksDB is what {@link #writeThrough} avoids.
   */
  public void flushAll() {
    checkOpen();
    if (!writable) {
      return;
    }
    checkWritable();
    writing("cannot flush", () -> {
      try (FlushOptions flush = new FlushOptions().setWaitForFlush(true).setAllowWriteStall(true)) {
        View v = primary();
        v.db().flush(flush, v.allHandles());
        unflushed = false;
      }
    });
  }

  /**
   * Writes a batch, waiting here, not inside RocksDB, while writes are stalled (memtables waiting for a
   * flush). After a flush that found the disk full, RocksDB stops writes and starts its own recovery,
   * which flushes once the disk has a little room; a writer waiting inside RocksDB for the stall to
   * end holds the write queue that flush needs, and both wait for ever (seen with RocksDB 11.8 on a
   * full tmpfs). So writes say "no slowdown", and a stall is waited out here, in short sleeps,
   * unless a background error has happened and the disk is full: then it is reported as that.
   */
  private void writeThrough(WriteOptions options, WriteBatch batch) throws RocksDBException {
    long waitedNanos = 0;
    for (int attempt = 0; ; attempt++) {
      try {
        primary().db().write(options, batch);
        return;
      } catch (RocksDBException e) {
        Status s = e.getStatus();
        if (s == null || s.getCode() != Status.Code.Incomplete) {
          throw e;
        }
        boolean errors = backgroundErrors() > 0;
        if (errors && (diskFull != null || lowOnSpace()) || errors && waitedNanos > STALLED_WITH_ERRORS_NANOS) {
          throw e;
        }
        long millis = Math.min(20, 1L << Math.min(attempt, 5));
        try {
          Thread.sleep(millis);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw e;
        }
        waitedNanos += millis * 1_000_000L;
      }
    }
  }

  /** How long a write waits out a stall after a background error before it reports it. */
  private static final long STALLED_WITH_ERRORS_NANOS = 30_000_000_000L;

  /** RocksDB's count of background errors (failed flushes and compactions) since the database opened. */
  private long backgroundErrors() {
    try {
      return primary().db().getLongProperty("rocksdb.background-errors");
    } catch (RocksDBException e) {
      return 0;
    }
  }

  /** Whether the disk has less free space than the reserve's headroom. */
  private boolean lowOnSpace() {
    long usable = DiskReserve.usableSpace(cacheDir);
    return usable >= 0 && usable < DiskReserve.headroomBytes(reserve.target());
  }

  /** A call into RocksDB that may fail. */
  @FunctionalInterface
  private interface RocksCall<T> {
    T call() throws RocksDBException;
  }

  /** A call into RocksDB that may fail, with nothing to return. */
  @FunctionalInterface
  private interface RocksRun {
    void run() throws RocksDBException;
  }

  /** Adds one operation to a batch being built. */
  private void batchOp(RocksRun op) {
    users.enter();
    try {
      op.run();
    } catch (RocksDBException e) {
      throw failure(cacheDir, "cannot build a write batch", e);
    } finally {
      users.exit();
    }
  }

  /** One write to the database; see {@link #writingFor}. */
  private void writing(String what, RocksRun write) {
    writingFor(what, () -> {
      write.run();
      return null;
    });
  }

  /**
   * One write to the database, as a user of the open instance. A failure is turned into the error to
   * throw ({@link #writeFailure}: a full disk reopens the database) only once the call has left it.
   */
  private <T> T writingFor(String what, RocksCall<T> write) {
    RocksDBException failed;
    users.enter();
    try {
      return write.call();
    } catch (RocksDBException e) {
      failed = e;
    } finally {
      users.exit();
    }
    throw writeFailure(what, failed);
  }

  public void put(WriteBatch b, Cf cf, byte[] key, byte[] value) {
    batchOp(() -> b.put(handle(cf), key, value));
  }

  public void delete(WriteBatch b, Cf cf, byte[] key) {
    batchOp(() -> b.delete(handle(cf), key));
  }

  void deleteAll(WriteBatch b, Cf cf) {
    byte[] end = new byte[128]; // longer than any key, all 0xff: above every key of ours
    java.util.Arrays.fill(end, (byte) 0xff);
    deleteRange(b, cf, new byte[0], end);
  }

  /** Deletes the keys from {@code from} (included) to {@code to} (excluded). */
  void deleteRange(WriteBatch b, Cf cf, byte[] from, byte[] to) {
    batchOp(() -> b.deleteRange(handle(cf), from, to));
  }

  /**
   * A writer's handle of {@code cf}, for building write batches. A batch refers to a family by its
   * number, which a reopened database keeps, so batches built before a reopen stay good.
   */
  private ColumnFamilyHandle handle(Cf cf) {
    if (!writable) {
      throw new IllegalStateException("cache " + cacheDir + " is open read-only");
    }
    return primary().handles().get(cf);
  }

  public void syncWal() {
    checkOpen();
    if (!writable) {
      return;
    }
    checkWritable();
    writing("cannot sync the write-ahead log", () -> primary().db().syncWal());
  }

  /** A tracked iterator positioned at {@code from} (null: the first key). */
  public Cursor cursor(Cf cf, byte[] from) {
    checkOpen();
    users.enter(); // until the cursor is closed: its iterator must not outlive its database
    boolean handedOut = false;
    try {
      View v = readView();
      ColumnFamilyHandle h = handle(v, cf);
      if (h == null) {
        return new Cursor(null, cf.cfName); // no database, or a family its writer has not created yet: empty
      }
      Cursor c = new Cursor(v.db().newIterator(h, from == null ? scans : reads), cf.cfName);
      handedOut = true;
      cursors.add(c);
      if (from == null) {
        c.it.seekToFirst();
      } else {
        c.it.seek(from);
      }
      return c;
    } finally {
      if (!handedOut) {
        users.exit();
      }
    }
  }

  /** Iterator over a column family; {@link #close()} it (try-with-resources). */
  public final class Cursor implements AutoCloseable {
    private final RocksIterator it;
    private final Thread owner = Thread.currentThread();
    private final String family;

    private Cursor(RocksIterator it, String family) {
      this.it = it;
      this.family = family;
    }

    public boolean valid() {
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

    public byte[] key() {
      return it.key();
    }

    public byte[] value() {
      return it.value();
    }

    public void next() {
      it.next();
    }

    @Override
    public void close() {
      if (it != null && cursors.remove(this)) {
        it.close();
        users.exit(owner);
      }
    }
  }

  /**
   * What {@link #compactAll} could not give back to the disk yet.
   *
   * @param garbageBytes bytes of deleted values still in blob files, beside values that stay
   * @param neededBytes the free space that rewriting those blob files needs (0 when nothing is left)
   */
  public record Compaction(long garbageBytes, long neededBytes) {
    public static final Compaction COMPLETE = new Compaction(0, 0);
  }

  /**
   * Flushes and compacts every family, so deleted data leaves the disk. A blob family is compacted
   * with its garbage collection forced, which rewrites the live values of every blob file holding
   * deleted ones (so a file is gone once nothing in it is live), when the disk has room for those
   * values; else without garbage collection, which needs almost no space and still deletes the blob
   * files that hold nothing live, and then with it if that made room. What is left is returned.
   */
  public Compaction compactAll() {
    checkOpen();
    if (!writable) {
      return Compaction.COMPLETE;
    }
    checkWritable();
    return writingFor("cannot compact", () -> {
      try (FlushOptions flush = new FlushOptions().setWaitForFlush(true).setAllowWriteStall(true);
          CompactRangeOptions compact = new CompactRangeOptions().setExclusiveManualCompaction(true)
              .setBottommostLevelCompaction(CompactRangeOptions.BottommostLevelCompaction.kForceOptimized)) {
        View v = primary();
        RocksDB db = v.db();
        db.flush(flush, v.allHandles());
        long garbage = 0;
        long needed = 0;
        for (Cf cf : Cf.values()) {
          ColumnFamilyHandle h = v.handles().get(cf);
          if (!cf.blobs) {
            db.compactRange(h, null, null, compact);
            continue;
          }
          long live = liveBlobBytes(db, h);
          if (!roomFor(live)) {
            compactWithoutBlobCollection(db, h, compact);
            live = liveBlobBytes(db, h);
          }
          if (roomFor(live)) {
            db.setOptions(h, MutableColumnFamilyOptions.builder().setEnableBlobGarbageCollection(true)
                .setBlobGarbageCollectionAgeCutoff(1.0).build());
            try {
              db.compactRange(h, null, null, compact);
            } finally {
              db.setOptions(h, MutableColumnFamilyOptions.builder().setEnableBlobGarbageCollection(blobCollection)
                  .setBlobGarbageCollectionAgeCutoff(BLOB_GC_AGE_CUTOFF).build());
            }
          }
          long left = db.getLongProperty(h, "rocksdb.live-blob-file-garbage-size");
          if (left > 0) {
            garbage += left;
            needed = Math.max(needed, liveBlobBytes(db, h) + DiskReserve.headroomBytes(reserve.target()));
          }
        }
        return new Compaction(garbage, needed);
      }
    });
  }

  /** Bytes of deleted values still in blob files (what a compaction with garbage collection would free). */
  long blobGarbageBytes() {
    checkOpen();
    users.enter();
    try {
      View v = readView();
      long garbage = 0;
      for (Cf cf : Cf.values()) {
        ColumnFamilyHandle h = v == null || !cf.blobs ? null : v.handles().get(cf);
        if (h != null) {
          garbage += v.db().getLongProperty(h, "rocksdb.live-blob-file-garbage-size");
        }
      }
      return garbage;
    } catch (RocksDBException e) {
      return 0;
    } finally {
      users.exit();
    }
  }

  /** Bytes of live values in the family's blob files: what forced garbage collection would rewrite. */
  private static long liveBlobBytes(RocksDB db, ColumnFamilyHandle h) throws RocksDBException {
    return Math.max(0, db.getLongProperty(h, "rocksdb.live-blob-file-size")
        - db.getLongProperty(h, "rocksdb.live-blob-file-garbage-size"));
  }

  /** Whether the disk has room to rewrite {@code bytes} and still keep the reserve's headroom free. */
  private boolean roomFor(long bytes) {
    long usable = DiskReserve.usableSpace(cacheDir);
    return usable < 0 || usable >= bytes + DiskReserve.headroomBytes(reserve.target());
  }

  private void compactWithoutBlobCollection(RocksDB db, ColumnFamilyHandle h, CompactRangeOptions compact)
      throws RocksDBException {
    db.setOptions(h, MutableColumnFamilyOptions.builder().setEnableBlobGarbageCollection(false).build());
    try {
      db.compactRange(h, null, null, compact);
    } finally {
      db.setOptions(h, MutableColumnFamilyOptions.builder().setEnableBlobGarbageCollection(blobCollection).build());
    }
  }

  /**
   * Writes the disk reserve if there is none and the disk has room ({@link DiskReserve#ensure}), and
   * turns automatic blob garbage collection on or off for the space there is now. A writer's open
   * calls it, and so does every operation that frees space.
   */
  public void ensureReserve(java.util.function.Consumer<String> notices) {
    if (!writable) {
      return;
    }
    reserve.ensure(notices);
    users.enter();
    try {
      View v = view;
      if (v != null) {
        adjustBlobCollection(v);
      }
    } finally {
      users.exit();
    }
  }

  /**
   * Automatic blob garbage collection rewrites, during background compactions, the live values of the
   * oldest quarter of the blob files. On a disk without room for them those writes would fill it,
   * and take the space a released reserve gave back; so it runs only while the disk has room for a
   * quarter of the live blob data besides the reserve's headroom.
   */
  private void adjustBlobCollection(View v) {
    try {
      long live = 0;
      for (Cf cf : Cf.values()) {
        if (cf.blobs) {
          live += liveBlobBytes(v.db(), v.handles().get(cf));
        }
      }
      boolean on = roomFor(live / 4);
      if (on != blobCollection || !on) {
        for (Cf cf : Cf.values()) {
          if (cf.blobs) {
            v.db().setOptions(v.handles().get(cf),
                MutableColumnFamilyOptions.builder().setEnableBlobGarbageCollection(on).build());
          }
        }
        blobCollection = on;
      }
    } catch (RocksDBException e) {
      // keep it as it is: a full disk then shows as one
    }
  }

  /**
   * Releases the disk reserve when the disk is (nearly) full, so that what comes next (a prune, a
   * repair, a clear) can write the little it needs. The reserve is written again by {@link
   * DiskReserve#ensure} once there is room.
   */
  public void makeRoom() {
    if (writable && !roomFor(0)) {
      reserve.release();
    }
  }

  /** The database directory this store opened. */
  public Path databaseDir() {
    return dbDir;
  }

  /**
   * The id of a family's column family: what RocksDB writes into the header of each of its blob
   * files. -1 when the database has no such family.
   */
  public int familyId(Cf cf) {
    View v = view;
    ColumnFamilyHandle h = handle(v, cf);
    return h == null ? -1 : h.getID();
  }

  /**
   * Reads every block of every table file and checks its checksum (blob files are not read). A
   * damaged block is a {@link DamagedValueException} naming the file.
   */
  public void verifyTables() {
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
  public List<String> liveFiles() {
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
  public void compactTables() {
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

  /** Bytes the database occupies on disk (-1 when that cannot be read). */
  long diskUsage() {
    return FileTrees.treeBytes(cacheDir.resolve(DB_DIR));
  }

  // ---------------------------------------------------------------- a full disk

  /**
   * Before a write: a database given up after a full disk is reopened first; when that still cannot
   * be done, the write fails as the full disk did.
   */
  private void checkWritable() {
    checkOpen();
    XlacException pending = reopenPending;
    if (pending != null && !reopen()) {
      throw pending;
    }
  }

  /**
   * Whether a failed write, flush or open met a full disk: RocksDB says so; or this database met
   * one before, and RocksDB now repeats it in other words ("Writer has previous error", a
   * background error); or, unless the database reports damage, the disk has less free space than
   * the reserve's headroom.
   */
  private boolean meansDiskFull(RocksDBException e) {
    String msg = message(e);
    if (isDiskFull(msg)) {
      if (diskFull == null) {
        diskFull = msg;
      }
      return true;
    }
    if (isCorruption(e) || isMissingFile(e) || !writable) {
      return false;
    }
    return diskFull != null || lowOnSpace();
  }

  /**
   * The exception for a failed write, flush or compaction. A full disk also releases the reserve and
   * reopens the database, so that this store (and the next command) can go on once there is room.
   */
  private XlacException writeFailure(String what, RocksDBException e) {
    if (!meansDiskFull(e)) {
      return failure(cacheDir, what, e);
    }
    String first = diskFull != null ? diskFull : what + ": " + message(e);
    long released = reserve.release();
    XlacException full = diskFullException(first, released);
    reopenPending = full;
    reopen();
    return full;
  }

  private DiskFullException diskFullException(String detail, long released) {
    long usable = DiskReserve.usableSpace(cacheDir);
    String free = usable < 0 ? "" : "; " + dev.xlac.core.Sizes.human(usable) + " free";
    return new DiskFullException("cache " + cacheDir + ": disk full (" + detail + free + ")"
        + (released > 0 ? "; released the cache's disk reserve of " + dev.xlac.core.Sizes.human(released) : "")
        + "; free space on its file system, or make room with 'xlac cache prune' or 'xlac cache clear', which work"
        + " on a full disk");
  }

  /**
   * Replaces the writer's database instance with a fresh one, when nobody is using it (else later,
   * at the next write: {@link #checkWritable}). Returns whether the database is open and writable.
   */
  private boolean reopen() {
    if (!users.tryExclusive(2_000)) {
      return false;
    }
    boolean ok = false;
    try {
      View old = view;
      view = null;
      if (old != null) {
        old.close();
      }
      // A clear's swap that failed half-way is finished or undone first (this writer holds the lock).
      DatabaseSwap.recover(cacheDir, m -> { });
      requireCurrentFile(cacheDir.resolve(DB_DIR));
      view = openWriterView(cacheDir.resolve(DB_DIR));
      adjustBlobCollection(view);
      unflushed = false; // unlogged batches not flushed before are gone with the old instance
      diskFull = null;
      reopenPending = null;
      ok = true;
    } catch (RocksDBException | RuntimeException e) {
      // still no room: the next write tries again, and fails as the full disk did
    } finally {
      users.endExclusive();
    }
    if (ok) {
      reopened.run();
    }
    return ok;
  }

  /**
   * Replaces the database with a fresh one that holds only {@code meta} (records of the meta family):
   * what {@code cache clear} does, in a way that needs no free space beyond a new, nearly empty
   * database. The fresh database is built and marked complete in a rebuild directory, then swapped
   * in place of the old one, which is deleted ({@link DatabaseSwap}, as a repair's rebuild is): a
   * crash at any point leaves either the old database or the fresh one, and the next writer finishes
   * or undoes the swap. A reader that opens in between reads the fresh one once it is complete.
   *
   * @return the bytes the old database occupied on disk
   */
  long replaceWithFresh(Map<byte[], byte[]> meta) {
    checkOpen();
    if (!writable) {
      throw new IllegalStateException("cache " + cacheDir + " is open read-only");
    }
    if (!users.tryExclusive(10_000)) {
      throw new IllegalStateException("cache " + cacheDir + " is in use by another thread of this process");
    }
    Path dbDir = cacheDir.resolve(DB_DIR);
    long before = diskUsage();
    try {
      View old = view;
      view = null;
      if (old != null) {
        old.close();
      }
      Path rebuild = DatabaseSwap.newRebuildDirectory(cacheDir); // reopenAfter's recover removes it unfinished
      Path fresh = rebuild.resolve(DB_DIR);
      try {
        buildFresh(fresh, meta);
      } catch (RocksDBException e) {
        FileTrees.deleteTree(fresh);
        if (!meansDiskFull(e) || reserve.release() == 0) {
          throw e;
        }
        diskFull = null;
        buildFresh(fresh, meta); // with the space the reserve gave back
      }
      DatabaseSwap.markComplete(rebuild, false);
      DatabaseSwap.swap(cacheDir, rebuild, java.time.Instant.now());
      view = openWriterView(dbDir);
      adjustBlobCollection(view);
      unflushed = false;
      diskFull = null;
      reopenPending = null;
    } catch (RocksDBException e) {
      throw reopenAfter(failure(cacheDir, "cannot replace the database", e));
    } catch (IOException e) {
      throw reopenAfter(ioFailure(cacheDir, "cannot replace the database", e));
    } finally {
      users.endExclusive();
    }
    reopened.run();
    return before;
  }

  /**
   * After a failed replacement: the database as the replacement left it (the old one, or the fresh
   * one once it was complete), open again.
   */
  private XlacException reopenAfter(XlacException e) {
    if (view == null) {
      try {
        DatabaseSwap.recover(cacheDir, m -> { });
        view = openWriterView(cacheDir.resolve(DB_DIR));
      } catch (RocksDBException | RuntimeException again) {
        reopenPending = e;
      }
    }
    return e;
  }

  private void buildFresh(Path dir, Map<byte[], byte[]> meta) throws RocksDBException, IOException {
    PrivateFiles.createDirectories(dir);
    View v = openView(dir);
    try (WriteBatch b = new WriteBatch()) {
      for (Map.Entry<byte[], byte[]> e : meta.entrySet()) {
        b.put(v.handles().get(Cf.META), e.getKey(), e.getValue());
      }
      v.db().write(syncWrites, b);
      try (FlushOptions flush = new FlushOptions().setWaitForFlush(true).setAllowWriteStall(true)) {
        v.db().flush(flush, v.allHandles());
      }
    } finally {
      v.close();
    }
  }

  private static String message(RocksDBException e) {
    return e.getMessage() == null ? String.valueOf(e.getStatus()) : e.getMessage();
  }

  /**
   * Uses of the writer's database. {@link #reopen} and {@link #replaceWithFresh} close it, which
   * would crash a read or an iterator still using it, so they wait, a little, until there are none,
   * and keep new ones out meanwhile. A use never waits for a replacement that is only wanted, so a
   * thread holding a cursor can read again without a deadlock; a thread that holds one itself never
   * replaces the database (it would wait for itself) and leaves that to the next write.
   */
  private static final class Users {
    private final java.util.concurrent.atomic.AtomicInteger count = new java.util.concurrent.atomic.AtomicInteger();
    private final ThreadLocal<int[]> mine = ThreadLocal.withInitial(() -> new int[1]);

    void enter() {
      while (true) {
        int c = count.get();
        if (c >= 0) {
          if (count.compareAndSet(c, c + 1)) {
            mine.get()[0]++;
            return;
          }
        } else {
          synchronized (this) {
            boolean interrupted = false;
            while (count.get() < 0) {
              try {
                wait();
              } catch (InterruptedException e) {
                interrupted = true;
              }
            }
            if (interrupted) {
              Thread.currentThread().interrupt();
            }
          }
        }
      }
    }

    void exit() {
      exit(Thread.currentThread());
    }

    /** Ends a use entered by {@code owner} (a cursor may be closed by another thread at shutdown). */
    void exit(Thread owner) {
      count.decrementAndGet();
      if (owner == Thread.currentThread()) {
        mine.get()[0]--;
      }
    }

    boolean tryExclusive(long waitMillis) {
      if (mine.get()[0] > 0) {
        return false;
      }
      long deadline = System.nanoTime() + waitMillis * 1_000_000L;
      while (!count.compareAndSet(0, -1)) {
        if (System.nanoTime() > deadline) {
          return false;
        }
        try {
          Thread.sleep(1);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
      return true;
    }

    synchronized void endExclusive() {
      count.set(0);
      notifyAll();
    }
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

  public static XlacException ioFailure(Path cacheDir, String what, IOException e) {
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
    return dev.xlac.cache.DiskFullException.isDiskFull(msg);
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
        try (FlushOptions flush = new FlushOptions().setWaitForFlush(true).setAllowWriteStall(true)) {
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
  public static final class DamagedValueException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    public final boolean fileMissing;

    DamagedValueException(String message, boolean fileMissing) {
      super(message);
      this.fileMissing = fileMissing;
    }
  }
}
