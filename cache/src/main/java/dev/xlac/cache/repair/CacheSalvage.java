package dev.xlac.cache.repair;

import com.github.luben.zstd.ZstdInputStream;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.RepairReport;
import dev.xlac.cache.store.Checksums;
import dev.xlac.cache.store.DatabaseSwap;
import dev.xlac.cache.store.Keys;
import dev.xlac.cache.store.PendingHits;
import dev.xlac.cache.store.Records;
import dev.xlac.cache.store.Records.ArtifactRecord;
import dev.xlac.cache.store.Records.GraphRecord;
import dev.xlac.cache.store.RocksDbStore;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.cache.store.Store;
import dev.xlac.cache.store.StoredValues;
import dev.xlac.cache.store.Totals;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.FileTrees;
import dev.xlac.hlo.HloFileKind;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * Rebuilds a cache's database from what can still be read, into a fresh database in
 * {@code DIR/.rebuild-PID} (which {@link DatabaseSwap} then puts in place). For a database that
 * cannot be opened, or whose table files have damaged blocks:
 *
 * <ol>
 *   <li>RocksDB's RepairDB runs on a hard-link copy of {@code DIR/db} ({@code DIR/.salvage-PID/db}; the
 *       original's files are never written), and the repaired copy is opened read-only. RepairDB
 *       keeps every table file it can read whole and replays the write-ahead logs, but drops the
 *       blob files.
 *   <li>Records (graphs, artifacts, compiler identities, settings, usage counters) are read from the
 *       original database when it still opens (its view is the latest), then from the repaired copy, family by
 *       family, until one source reads the family whole: RepairDB drops a damaged table, deletions in it included,
 *       so an older view could bring back removed entries. A record only the repaired copy has is taken when the
 *       original's access index, read whole, still lists it.
 *   <li>Values come from those databases or, where they cannot read them, from the blob files
 *       themselves ({@link ValueSalvage}), and are taken only when their SHA-256 is their record's.
 *   <li>A value whose record is lost is restored when it proves itself: a graph's module whose
 *       recomputed fingerprint is its key (its name read from the module), an artifact whose graph and
 *       compiler identity are kept (compile time unknown; its bytes passed RocksDB's block checksum or
 *       the blob record's CRC). Only entries the cache's access index still lists are restored when it
 *       could be read whole, and none whose family of records the original read whole (no record there: it was
 *       removed), so entries removed before the damage do not come back.
 * </ol>
 *
 * Everything else is reported lost, entry by entry.
 */
final class CacheSalvage {
  /** Values without a record are read into memory to be checked; larger ones are given up. */
  private static final long MAX_RESTORED_BYTES = 256L << 20;
  private static final String RESTORED_SOURCE = "restored by 'xlac cache verify --repair'";

  private final Path cacheDir;
  private final Clock clock;
  private final Consumer<String> notices;
  private final List<RocksDbStore> sources = new ArrayList<>();
  /** The damaged database as it opened (its view is the latest), or null; then the first of {@link #sources}. */
  private RocksDbStore original;
  private final List<String> notes = new ArrayList<>();

  // What the sources hold.
  private final Map<ByteBuffer, GraphRecord> graphRecords = new TreeMap<>();
  private final Map<ByteBuffer, ArtifactRecord> artifactRecords = new TreeMap<>();
  private final Map<String, byte[]> identities = new HashMap<>();
  private final Map<String, byte[]> config = new LinkedHashMap<>();
  private final Map<ByteBuffer, Long> accessed = new HashMap<>();
  /** Runtime entries (schema version 4): their records, and the keys the access index lists. */
  private final Map<ByteBuffer, Records.RequestRecord> requestRecords = new TreeMap<>();
  private final Set<ByteBuffer> accessedRequests = new HashSet<>();
  private boolean accessComplete;
  /**
   * The record keys of each family the original database read whole: a key not among them was removed, so the
   * access index cannot bring it back ({@link #liveByAccess}); one among them whose record cannot be decoded can.
   */
  private final Map<Cf, Set<ByteBuffer>> wholeInOriginal = new EnumMap<>(Cf.class);
  private Totals counters;
  /** Which runtime-hit records the counters include ({@link PendingHits}), from the counters' source. */
  private byte[] countedHits;
  private boolean settingsRead;

  private CacheSalvage(Path cacheDir, Clock clock, Consumer<String> notices) {
    this.cacheDir = cacheDir;
    this.clock = clock;
    this.notices = notices;
  }

  /**
   * Builds {@code rebuildDir/db} from the cache at {@code cacheDir} (whose lock the caller holds).
   *
   * @param original the damaged database opened read-only, when it still opens; else null
   * @param entries false for {@code cache clear}: only the settings and counters are kept
   */
  static Result rebuild(Path cacheDir, RocksDbStore original, Path rebuildDir, boolean entries, Clock clock,
      Consumer<String> notices) throws IOException, InterruptedException {
    return new CacheSalvage(cacheDir, clock, notices).run(original, rebuildDir, entries);
  }

  /** What the rebuild kept ({@link RepairReport.Salvage}) and lost. */
  record Result(RepairReport.Salvage salvage, List<RepairReport.LostEntry> lost, List<String> notes) {}

  private Result run(RocksDbStore original, Path rebuildDir, boolean entries) throws IOException, InterruptedException {
    Path salvageDir = DatabaseSwap.newSalvageDirectory(cacheDir);
    RocksDbStore repaired = null;
    try {
      if (original != null) {
        sources.add(original);
      }
      this.original = original;
      repaired = repairedCopy(salvageDir);
      if (repaired != null) {
        sources.add(repaired);
      }
      BlobFiles blobs = null;
      if (entries) {
        try {
          blobs = BlobFiles.scanDirectory(cacheDir.resolve(RocksDbStore.DB_DIR));
        } catch (IOException e) {
          notes.add("the blob files could not be read (" + XlacException.reason(e) + ")");
        }
      }
      readRecords(entries);
      ValueSalvage values = new ValueSalvage(sources, blobs, familyIds());
      try (Store fresh = Store.openRebuild(rebuildDir, notices, clock)) {
        Writer w = new Writer(fresh, values, blobs);
        w.settings();
        if (entries) {
          w.graphs();
          w.artifacts();
          w.requests();
        }
        fresh.flushUnlogged();
        return new Result(new RepairReport.Salvage(w.graphsKept, w.graphsRestored, w.artifactsKept, w.artifactsRestored,
            w.fromBlobFiles, w.logsLost, settingsRead), w.lost, List.copyOf(notes));
      }
    } finally {
      if (repaired != null) {
        repaired.close();
      }
      FileTrees.deleteTree(salvageDir);
    }
  }

  /**
   * A hard-link copy of the database files (copies where links cannot be made; the small files that
   * RepairDB archives are copied), repaired by RocksDB's RepairDB and opened read-only; null, with a
   * note, when any of that fails.
   */
  private RocksDbStore repairedCopy(Path salvageDir) {
    Path from = cacheDir.resolve(RocksDbStore.DB_DIR);
    Path to = salvageDir.resolve(RocksDbStore.DB_DIR);
    try {
      Files.createDirectories(to);
      try (var s = Files.list(from)) {
        for (Path f : s.toList()) {
          String n = f.getFileName().toString();
          if (!Files.isRegularFile(f)) {
            continue;
          }
          if (n.endsWith(".sst") || n.endsWith(".log") || n.endsWith(".blob")) {
            // Never written by RepairDB or a read-only open: a link is safe, and costs no space.
            try {
              Files.createLink(to.resolve(n), f);
            } catch (IOException | UnsupportedOperationException e) {
              Files.copy(f, to.resolve(n), StandardCopyOption.COPY_ATTRIBUTES);
            }
          } else if (n.startsWith("MANIFEST-") || n.equals("CURRENT") || n.startsWith("OPTIONS-")) {
            Files.copy(f, to.resolve(n));
          }
        }
      }
      RocksDbRepair.repair(to);
      return RocksDbStore.open(salvageDir, false);
    } catch (IOException | RuntimeException e) {
      notes.add("RocksDB's repair of a copy of the database failed (" + XlacException.reason(e) + ")");
      return null;
    }
  }

  /** Each value family's column family id in the blob files: as the databases number them, else as xlac creates them. */
  private Map<Cf, Integer> familyIds() {
    Map<Cf, Integer> ids = new EnumMap<>(Cf.class);
    for (Cf cf : Cf.values()) {
      ids.put(cf, cf.ordinal() + 1); // "default" is 0, then the families in the order xlac creates them
      for (RocksDbStore s : sources) {
        int id = s.familyId(cf);
        if (id >= 0) {
          ids.put(cf, id);
          break;
        }
      }
    }
    return ids;
  }

  // ---------------------------------------------------------------- reading the records

  private void readRecords(boolean entries) {
    // Settings and counters: the first source that reads them wins (the original's view is the latest).
    for (RocksDbStore s : sources) {
      Map<String, byte[]> found = new LinkedHashMap<>();
      boolean complete = scan(s, Cf.META, (k, v) -> {
        if (Keys.startsWith(k, Store.CONFIG_PREFIX)) {
          found.put(new String(k, StandardCharsets.US_ASCII), v);
        }
      });
      found.forEach(config::putIfAbsent);
      if (counters == null) {
        try {
          byte[] t = s.get(Cf.META, Store.TOTALS_KEY);
          counters = t == null ? null : Records.decodeTotals(t);
          countedHits = counters == null ? null : s.get(Cf.META, PendingHits.COUNTED_KEY);
        } catch (RuntimeException e) {
          // damaged: the next source, or counters from zero
        }
      }
      if (complete) {
        settingsRead = true;
        break; // a whole view of the settings: an older one could only bring back removed ones
      }
    }
    if (!entries) {
      return;
    }
    for (RocksDbStore s : sources) {
      scan(s, Cf.IDENTITIES, (k, v) -> {
        String digest = Keys.hex(k);
        try {
          if (CompilerIdentity.decode(new String(v, StandardCharsets.UTF_8)).digest().equals(digest)) {
            identities.putIfAbsent(digest, v);
          }
        } catch (IllegalArgumentException e) {
          // a damaged identity record: its artifacts are lost unless another source has it
        }
      });
    }
    boolean accessWholeInOriginal = false;
    for (RocksDbStore s : sources) {
      boolean complete = scan(s, Cf.ACCESS, (k, v) -> {
        if (k.length > 9 && Keys.accessKind(k) == Keys.KIND_REQUEST) {
          accessedRequests.add(ByteBuffer.wrap(Keys.accessId(k))); // as long as a graph's key: kept apart
        } else if (k.length > 9) {
          accessed.merge(ByteBuffer.wrap(Keys.accessId(k)), Keys.accessTime(k), Math::max);
        }
      });
      if (complete) {
        accessComplete = true;
        accessWholeInOriginal = s == original;
        break; // a whole view of the index: an older one could only bring back removed entries
      }
    }
    identitiesFromProbes();
    for (ByteBuffer k : keysOf(Cf.GRAPH_META, accessWholeInOriginal, accessed.keySet())) {
      GraphRecord r = firstRecord(Cf.GRAPH_META, k.array(), Records::decodeGraph);
      if (r != null) {
        graphRecords.put(k, r);
      }
    }
    for (ByteBuffer k : keysOf(Cf.ARTIFACT_META, accessWholeInOriginal, accessed.keySet())) {
      ArtifactRecord r = firstRecord(Cf.ARTIFACT_META, k.array(), Records::decodeArtifact);
      if (r != null) {
        artifactRecords.put(k, r);
      }
    }
    for (ByteBuffer k : keysOf(Cf.REQUEST_META, accessWholeInOriginal, accessedRequests)) {
      Records.RequestRecord r = firstRecord(Cf.REQUEST_META, k.array(), Records::decodeRequest);
      if (r != null) {
        requestRecords.put(k, r);
      }
    }
  }

  /**
   * The record keys of a family: from each source in turn until one reads the family whole (the original first:
   * its view is the latest; an older view could only bring back removed records). A key that only a later source
   * has (RocksDB's repair of a copy drops a damaged table, and with it the deletions in it) is taken only when the
   * original's access index, read whole, still lists it.
   */
  private Set<ByteBuffer> keysOf(Cf cf, boolean accessWholeInOriginal, Set<ByteBuffer> listed) {
    Set<ByteBuffer> keys = new HashSet<>();
    for (RocksDbStore s : sources) {
      Set<ByteBuffer> found = new HashSet<>();
      boolean complete = scan(s, cf, (k, v) -> found.add(ByteBuffer.wrap(k)));
      if (s != original && accessWholeInOriginal) {
        found.removeIf(k -> !keys.contains(k) && !listed.contains(k));
      }
      keys.addAll(found);
      if (complete) {
        if (s == original) {
          wholeInOriginal.put(cf, found);
        }
        break;
      }
    }
    return keys;
  }

  /**
   * Whether the access index may vouch for an entry whose record is missing: not when the original database read
   * that entry's family of records whole without it (it was removed; the index entry is an older view's).
   */
  private boolean liveByAccess(Cf records, ByteBuffer key) {
    Set<ByteBuffer> whole = wholeInOriginal.get(records);
    return whole == null || whole.contains(key);
  }

  /**
   * Compile runs keep each PJRT plugin's identity in {@code DIR/probes/*.identity}, in the same text
   * form as the identity records: where a record is lost, such a file whose text hashes to the
   * artifact's compiler digest gives it back.
   */
  private void identitiesFromProbes() {
    Path probes = cacheDir.resolve("probes");
    if (!Files.isDirectory(probes)) {
      return;
    }
    try (var s = Files.list(probes)) {
      for (Path p : s.filter(f -> f.getFileName().toString().endsWith(".identity")).toList()) {
        try {
          if (Files.size(p) > 1 << 20) {
            continue;
          }
          CompilerIdentity id = CompilerIdentity.decode(Files.readString(p, StandardCharsets.UTF_8));
          identities.putIfAbsent(id.digest(), id.encode().getBytes(StandardCharsets.UTF_8));
        } catch (IOException | IllegalArgumentException e) {
          // not an identity file: skipped
        }
      }
    } catch (IOException e) {
      // no identities from there
    }
  }

  private <T> T firstRecord(Cf cf, byte[] key, java.util.function.Function<byte[], T> decode) {
    for (RocksDbStore s : sources) {
      try {
        byte[] v = s.get(cf, key);
        if (v != null) {
          return decode.apply(v);
        }
      } catch (RuntimeException e) {
        // damaged in this source: the next one
      }
    }
    return null;
  }

  /** Every key and value of a family in {@code s}; false when a damaged block cut the scan short. */
  private static boolean scan(RocksDbStore s, Cf cf, BiConsumer<byte[], byte[]> each) {
    try (Cursor c = s.cursor(cf, null)) {
      for (; c.valid(); c.next()) {
        each.accept(c.key(), c.value());
      }
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  // ---------------------------------------------------------------- writing the fresh database

  /** Writes what was read into the fresh store, an entry per unlogged batch; flushed at the end. */
  private final class Writer {
    final Store fresh;
    final ValueSalvage values;
    final BlobFiles blobs;
    final Set<ByteBuffer> keptGraphs = new HashSet<>();
    final List<RepairReport.LostEntry> lost = new ArrayList<>();
    final Map<ByteBuffer, String> moduleNames = new HashMap<>();
    final HloModuleReader reader = new HloModuleReader();
    long graphsKept;
    long graphsRestored;
    long artifactsKept;
    long artifactsRestored;
    long fromBlobFiles;
    long logsLost;

    Writer(Store fresh, ValueSalvage values, BlobFiles blobs) {
      this.fresh = fresh;
      this.values = values;
      this.blobs = blobs;
    }

    void settings() {
      fresh.commitUnlogged(txn -> {
        config.forEach((k, v) -> txn.put(Cf.META, k.getBytes(StandardCharsets.US_ASCII), v));
        if (counters != null) {
          txn.totals().copyCountersFrom(counters);
          if (countedHits != null) {
            txn.putMeta(PendingHits.COUNTED_KEY, countedHits);
          }
        }
        return null;
      });
    }

    /** Every graph anything knows of: records, the access index, artifacts' keys, the blob files. */
    void graphs() {
      TreeMap<ByteBuffer, Boolean> known = new TreeMap<>(); // value: whether it was live (a record or an index entry says so)
      graphRecords.keySet().forEach(k -> known.put(k, true));
      artifactRecords.keySet().forEach(k -> known.put(ByteBuffer.wrap(Keys.graphOf(k.array())), true));
      accessed.keySet().stream().filter(k -> k.capacity() == Keys.DIGEST && liveByAccess(Cf.GRAPH_META, k))
          .forEach(k -> known.put(k, true));
      if (blobs != null) {
        for (byte[] k : blobs.keys(familyIds().get(Cf.GRAPHS))) {
          if (k.length == Keys.DIGEST || k.length == Keys.DIGEST + 4) {
            known.putIfAbsent(ByteBuffer.wrap(java.util.Arrays.copyOf(k, Keys.DIGEST)), false);
          }
        }
      }
      known.forEach((k, live) -> graph(k.array(), live));
    }

    private void graph(byte[] fp, boolean live) {
      ByteBuffer id = ByteBuffer.wrap(fp);
      GraphRecord rec = graphRecords.get(id);
      if (rec != null) {
        moduleNames.put(id, rec.moduleName());
        ValueSalvage.Copy c = values.copy(Cf.GRAPHS, fp, rec.storedBytes(), rec.storedSha256(),
            size -> fresh.values().writer(Cf.GRAPHS, fp, size, false));
        if (c != null) {
          try (StoredValues.ValueWriter w = c.writer()) {
            fresh.commitUnlogged(txn -> {
              txn.writeGraph(fp, rec, null);
              txn.commitValue(w);
              return null;
            });
          }
          kept(id, c.fromBlobFiles());
          return;
        }
      }
      if (!live && !restorable(id, Cf.GRAPH_META)) {
        return; // only a blob file remembers it: removed before the damage
      }
      if (restoreGraph(fp)) {
        return;
      }
      lost.add(new RepairReport.LostEntry(Keys.hex(fp).substring(0, 12), rec == null ? null : rec.moduleName(), null,
          rec == null ? "its record and its module could not be read" : "its module could not be read"));
    }

    private void kept(ByteBuffer graph, boolean fromBlobs) {
      keptGraphs.add(graph);
      graphsKept++;
      if (fromBlobs) {
        fromBlobFiles++;
      }
    }

    /** A graph whose record is lost, from a module whose fingerprint is its key. */
    private boolean restoreGraph(byte[] fp) {
      String[] name = new String[1];
      long[] raw = new long[1];
      byte[] stored = values.readWithoutRecord(Cf.GRAPHS, fp, MAX_RESTORED_BYTES, v -> {
        try {
          byte[] module = decompress(v);
          LoadedModule m = reader.parse(Path.of("graph"), HloFileKind.HLO_MODULE, module, module.length);
          if (!java.util.Arrays.equals(m.fingerprint().digest(), fp)) {
            return false;
          }
          name[0] = m.moduleName();
          raw[0] = module.length;
          return true;
        } catch (IOException | RuntimeException e) {
          return false;
        }
      });
      if (stored == null) {
        return false;
      }
      ByteBuffer id = ByteBuffer.wrap(fp);
      long t = accessed.getOrDefault(id, clock.millis());
      GraphRecord rec = new GraphRecord(name[0], RESTORED_SOURCE, t, t, 1, raw[0], stored.length,
          Checksums.sha256(stored), t, List.of());
      fresh.commitUnlogged(txn -> {
        txn.writeGraph(fp, rec, stored);
        return null;
      });
      moduleNames.put(id, name[0]);
      kept(id, false);
      graphsRestored++;
      return true;
    }

    void artifacts() {
      TreeMap<ByteBuffer, Boolean> known = new TreeMap<>();
      artifactRecords.keySet().forEach(k -> known.put(k, true));
      accessed.keySet().stream().filter(k -> k.capacity() == Keys.ARTIFACT && liveByAccess(Cf.ARTIFACT_META, k))
          .forEach(k -> known.put(k, true));
      if (blobs != null) {
        for (byte[] k : blobs.keys(familyIds().get(Cf.ARTIFACTS))) {
          if (k.length == Keys.ARTIFACT || k.length == Keys.ARTIFACT + 4) {
            known.putIfAbsent(ByteBuffer.wrap(java.util.Arrays.copyOf(k, Keys.ARTIFACT)), false);
          }
        }
      }
      known.forEach((k, live) -> artifact(k.array(), live));
    }

    private void artifact(byte[] key, boolean live) {
      ByteBuffer id = ByteBuffer.wrap(key);
      ArtifactRecord rec = artifactRecords.get(id);
      if (rec == null && !live && !restorable(id, Cf.ARTIFACT_META)) {
        return; // only a value remembers it: removed before the damage
      }
      ByteBuffer graph = ByteBuffer.wrap(Keys.graphOf(key));
      String digest = Keys.hex(Keys.compilerOf(key));
      byte[] identity = identities.get(digest);
      String compiler = identity == null ? digest.substring(0, 12) : shortName(identity, digest);
      String module = moduleNames.get(graph);
      String fp12 = Keys.hex(graph.array()).substring(0, 12);
      if (!keptGraphs.contains(graph)) {
        lost.add(new RepairReport.LostEntry(fp12, module, compiler, "its graph was lost"));
        return;
      }
      if (identity == null) {
        lost.add(new RepairReport.LostEntry(fp12, module, compiler, "its compiler's identity record could not be read"));
        return;
      }
      if (rec == null) {
        if (!restoreArtifact(key, digest, identity)) {
          lost.add(new RepairReport.LostEntry(fp12, module, compiler, "its record could not be read"));
        }
        return;
      }
      ValueSalvage.Copy bytes = null;
      ValueSalvage.Copy log = null;
      try {
        if (rec.status() == EntryStatus.COMPILED) {
          bytes = values.copy(Cf.ARTIFACTS, key, rec.bytes(), rec.sha256(),
              size -> fresh.values().writer(Cf.ARTIFACTS, key, size, false));
          if (bytes == null) {
            lost.add(new RepairReport.LostEntry(fp12, module, compiler, "its bytes could not be read"));
            return;
          }
        }
        ArtifactRecord r = rec;
        if (rec.logStoredBytes() > 0) {
          log = values.copy(Cf.LOGS, key, rec.logStoredBytes(), rec.logSha256(),
              size -> fresh.values().writer(Cf.LOGS, key, size, false));
          if (log == null) {
            logsLost++;
            r = new ArtifactRecord(rec.status(), rec.bytes(), rec.sha256(), rec.compileMillis(), rec.created(),
                rec.lastAccess(), rec.failureKind(), rec.failureMessage(), 0, 0, null);
          }
        }
        ArtifactRecord written = r;
        ValueSalvage.Copy b = bytes;
        ValueSalvage.Copy l = log;
        fresh.commitUnlogged(txn -> {
          txn.putIdentityText(digest, identity);
          txn.writeArtifact(key, written, null, null);
          if (b != null) {
            txn.commitValue(b.writer());
          }
          if (l != null) {
            txn.commitValue(l.writer());
          }
          return null;
        });
        artifactsKept++;
        if ((bytes != null && bytes.fromBlobFiles()) || (log != null && log.fromBlobFiles())) {
          fromBlobFiles++;
        }
      } finally {
        if (bytes != null) {
          bytes.writer().close();
        }
        if (log != null) {
          log.writer().close();
        }
      }
    }

    /**
     * Every runtime entry a record or the access index knows of: kept when its record and both its values (the
     * request and the executable, each checked against its SHA-256) could be read; else lost, and reported.
     */
    void requests() {
      Set<ByteBuffer> known = new java.util.TreeSet<>(requestRecords.keySet());
      accessedRequests.stream().filter(k -> liveByAccess(Cf.REQUEST_META, k)).forEach(known::add);
      for (ByteBuffer id : known) {
        byte[] digest = id.array();
        Records.RequestRecord rec = requestRecords.get(id);
        String key = CacheVerifier.shortKey(digest);
        if (rec == null) {
          lost.add(RepairReport.LostEntry.request(key, null, "its record could not be read"));
          continue;
        }
        ValueSalvage.Copy request = null;
        ValueSalvage.Copy executable = null;
        try {
          request = values.copy(Cf.REQUESTS, digest, rec.requestStoredBytes(), rec.requestSha256(),
              size -> fresh.values().writer(Cf.REQUESTS, digest, size, false));
          executable = request == null ? null : values.copy(Cf.EXECUTABLES, digest, rec.executableBytes(),
              rec.executableSha256(), size -> fresh.values().writer(Cf.EXECUTABLES, digest, size, false));
          if (executable == null) {
            lost.add(RepairReport.LostEntry.request(key, rec.platformName(), "its " + (request == null ? "request"
                : "executable") + " could not be read"));
            continue;
          }
          ValueSalvage.Copy q = request;
          ValueSalvage.Copy x = executable;
          fresh.commitUnlogged(txn -> {
            txn.writeRequest(digest, rec, null, null);
            txn.commitValue(q.writer());
            txn.commitValue(x.writer());
            return null;
          });
          if (request.fromBlobFiles() || executable.fromBlobFiles()) {
            fromBlobFiles++;
          }
        } finally {
          if (request != null) {
            request.writer().close();
          }
          if (executable != null) {
            executable.writer().close();
          }
        }
      }
    }

    /** An artifact whose record is lost, as compiled, from bytes a checksum vouches for. */
    private boolean restoreArtifact(byte[] key, String digest, byte[] identity) {
      byte[] v = values.readWithoutRecord(Cf.ARTIFACTS, key, MAX_RESTORED_BYTES, b -> true);
      if (v == null) {
        return false;
      }
      long t = accessed.getOrDefault(ByteBuffer.wrap(key), clock.millis());
      ArtifactRecord rec = new ArtifactRecord(EntryStatus.COMPILED, v.length, Checksums.sha256(v), 0, t, t, null, null,
          0, 0, null);
      fresh.commitUnlogged(txn -> {
        txn.putIdentityText(digest, identity);
        txn.writeArtifact(key, rec, v, null);
        return null;
      });
      artifactsKept++;
      artifactsRestored++;
      return true;
    }
  }

  /**
   * Whether an entry known only from a value may come back: not when the original database read its family's
   * records whole (no record there: it was removed), nor when a whole access index shows it was removed.
   */
  private boolean restorable(ByteBuffer id, Cf records) {
    return liveByAccess(records, id) && (!accessComplete || accessed.containsKey(id));
  }

  private static String shortName(byte[] identity, String digest) {
    try {
      return CompilerIdentity.decode(new String(identity, StandardCharsets.UTF_8)).shortName();
    } catch (IllegalArgumentException e) {
      return digest.substring(0, 12);
    }
  }

  /** A stored module, decompressed, at most {@link #MAX_RESTORED_BYTES} (a bomb costs nothing). */
  private static byte[] decompress(byte[] stored) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[1 << 16];
    try (ZstdInputStream z = new ZstdInputStream(new ByteArrayInputStream(stored))) {
      for (int n; (n = z.read(buf)) >= 0; ) {
        if (out.size() + (long) n > MAX_RESTORED_BYTES) {
          throw new IOException("too large");
        }
        out.write(buf, 0, n);
      }
    }
    return out.toByteArray();
  }
}
