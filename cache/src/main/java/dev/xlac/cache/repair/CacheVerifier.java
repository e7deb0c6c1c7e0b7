package dev.xlac.cache.repair;

import dev.xlac.cache.DamagedCacheException;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.RepairReport;
import dev.xlac.cache.VerifyReport;
import dev.xlac.cache.store.CheckedValue;
import dev.xlac.cache.store.Keys;
import dev.xlac.cache.store.Records;
import dev.xlac.cache.store.Records.ArtifactRecord;
import dev.xlac.cache.store.Records.GraphRecord;
import dev.xlac.cache.store.Records.RequestRecord;
import dev.xlac.cache.store.RequestEntries;
import dev.xlac.cache.store.RocksDbStore;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.cache.store.RocksDbStore.DamagedValueException;
import dev.xlac.cache.store.Store;
import dev.xlac.cache.store.StoredValues;
import dev.xlac.cache.store.Totals;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.XlacException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Checks the database's files (every table block's checksum, every blob file's header and footer),
 * every stored value against its checksum and every index against the records; and repairs in
 * place on request.
 *
 * <p>Repair in place handles damage confined to values: a value RocksDB cannot read any more is
 * read back from the blob files where its record there is intact ({@link ValueSalvage}) and written
 * again; an entry whose value is lost is dropped (a graph with its artifacts, since an artifact
 * must not outlive its graph); the access index and totals are rebuilt from the records; then the
 * tables are compacted, so that no live reference is left pointing into a blob file that is
 * missing or unreadable (a later compaction or blob garbage collection would trip over it). Damage
 * that cannot be fixed in place — a table block that fails its checksum (RocksDB cannot compact
 * past it), a damaged blob file still in use after all that — is left alone and named in
 * {@link InPlace#rebuildReason()}: {@link DatabaseRepair} then rebuilds the database. Values are read
 * by key from their records; the blob families are never scanned, since an iterator would load
 * every blob a second time.
 */
public final class CacheVerifier {
  private final Store store;
  private final List<VerifyReport.Problem> problems = new ArrayList<>();
  /** Damaged values by entry: what to drop or recover. */
  private final List<DamagedValue> damagedValues = new ArrayList<>();
  private final List<byte[]> unreadableGraphRecords = new ArrayList<>();
  private final List<byte[]> unreadableArtifactRecords = new ArrayList<>();
  private final List<byte[]> unreadableRequestRecords = new ArrayList<>();
  /** Requests whose value is intact but is not the request of its key (or does not decode), with why. */
  private final Map<ByteBuffer, String> foreignRequests = new LinkedHashMap<>();
  private final Map<ByteBuffer, String> platforms = new java.util.HashMap<>();
  private final Map<ByteBuffer, String> moduleNames = new java.util.HashMap<>();
  /** Blob files in use that RocksDB cannot read (missing, truncated, header or footer damaged). */
  private final Map<String, String> damagedBlobFiles = new LinkedHashMap<>();
  /** Why the database has to be rebuilt (a damaged table block); null when it need not be. */
  private String tableDamage;
  private boolean indexesOutOfStep;

  /** Checks every checksum and index record; with {@code repair}, drops what is damaged. */
  public static VerifyReport run(Store store, boolean repair) {
    if (repair) {
      store.requireWritable();
      store.db().makeRoom(); // a repair on a full disk writes a little
    }
    VerifyReport r = new CacheVerifier(store).verify(repair);
    if (repair) {
      store.invalidateMemory();
      store.db().ensureReserve(store.noticesSink());
    }
    return r;
  }

  CacheVerifier(Store store) {
    this.store = store;
  }

  /** One value that did not read back as its record says: a graph's module, an artifact's bytes or log. */
  private record DamagedValue(Cf cf, byte[] key, long size, byte[] sha, String entry, String why) {}

  /**
   * What a repair in place did: {@code found} (each problem with what was done about it), the
   * entries it gave up, and why the database must still be rebuilt (null: it need not be).
   */
  record InPlace(VerifyReport found, List<RepairReport.LostEntry> lost, String rebuildReason, VerifyReport after) {}

  /** Checks; with {@code repair}, repairs what can be repaired in place (see the class comment). */
  VerifyReport verify(boolean repair) {
    if (!repair) {
      return check();
    }
    InPlace r = repairInPlace();
    if (r.rebuildReason() == null) {
      return r.found();
    }
    List<VerifyReport.Problem> all = new ArrayList<>(r.found().problems());
    all.add(new VerifyReport.Problem("database", "cannot be repaired in place (" + r.rebuildReason()
        + "); run 'xlac cache verify --repair'", true));
    return new VerifyReport(r.found().graphsChecked(), r.found().artifactsChecked(), r.found().bytesChecked(),
        List.copyOf(all), false, r.found().requestsChecked());
  }

  private VerifyReport check() {
    long[] counts = scan();
    return new VerifyReport(counts[0], counts[1], counts[2], List.copyOf(problems), false, counts[3]);
  }

  /** Checks, then repairs in place what can be (the caller holds the writer lock: the store is writable). */
  InPlace repairInPlace() {
    long[] counts = scan();
    damagedBlobFiles.forEach((f, why) -> problem("blob file " + f, why, true));
    if (problems.isEmpty()) {
      VerifyReport clean = new VerifyReport(counts[0], counts[1], counts[2], List.of(), false, counts[3]);
      return new InPlace(clean, List.of(), null, clean);
    }
    if (tableDamage != null) {
      return new InPlace(new VerifyReport(counts[0], counts[1], counts[2], List.copyOf(problems), false, counts[3]),
          List.of(),
          "a table file has a damaged block: " + tableDamage, null);
    }
    List<RepairReport.LostEntry> lost = new ArrayList<>();
    String rebuild = null;
    VerifyReport after = null;
    try {
      recoverValues();
      lost.addAll(dropDamaged());
      rebuildIndexes();
      store.db().syncWal();
      if (!damagedValues.isEmpty() || !damagedBlobFiles.isEmpty()) {
        // Deleted and rewritten values leave the tables, and a blob file nothing refers to any more goes.
        store.db().compactTables();
        rebuild = damagedBlobFileStillInUse();
      }
      if (rebuild == null) {
        after = new CacheVerifier(store).check();
        if (!after.clean()) {
          rebuild = "after repairing in place: " + after.problems().getFirst().entry() + ": "
              + after.problems().getFirst().description();
        }
      }
    } catch (DamagedValueException e) {
      rebuild = "RocksDB reports damage: " + e.getMessage();
    } catch (DamagedCacheException e) {
      rebuild = e.damage();
    }
    List<VerifyReport.Problem> done = rebuild != null ? List.copyOf(problems) : problems.stream().map(p ->
        p.action() != null ? p
            : p.entry().startsWith("blob file ") ? new VerifyReport.Problem(p.entry(), p.description()
                + "; no longer in use", true, "repaired")
            : p.withAction(p.damage() ? "dropped" : "rebuilt")).toList();
    return new InPlace(new VerifyReport(counts[0], counts[1], counts[2], done, rebuild == null, counts[3]),
        List.copyOf(lost),
        rebuild, rebuild == null ? after : null);
  }

  /** Reads everything; returns graphs, artifacts and bytes checked. */
  private long[] scan() {
    checkFiles();
    long graphCount = 0;
    long artifactCount = 0;
    long requestCount = 0;
    Set<ByteBuffer> graphs = new HashSet<>();
    Totals recomputed = new Totals();
    Set<ByteBuffer> expectedAccess = new HashSet<>();
    try {
      try (Cursor g = store.db().cursor(Cf.GRAPH_META, null)) {
        for (; g.valid(); g.next()) {
          graphCount++;
          byte[] fp = g.key();
          graphs.add(ByteBuffer.wrap(fp));
          GraphRecord r;
          try {
            r = Records.decodeGraph(g.value());
          } catch (IllegalArgumentException e) {
            problem("graph " + shortHex(fp), "its record is unreadable (" + e.getMessage() + ")", true);
            unreadableGraphRecords.add(fp);
            continue;
          }
          moduleNames.put(ByteBuffer.wrap(fp), r.moduleName());
          recomputed.addGraph(r, 1);
          expectedAccess.add(ByteBuffer.wrap(Keys.access(r.lastAccess(), Keys.KIND_GRAPH, fp)));
          String name = "graph " + shortHex(fp) + " (" + r.moduleName() + ")";
          checkValue(Cf.GRAPHS, fp, r.storedBytes(), r.storedSha256(), "module", false, name);
        }
      }
      try (Cursor a = store.db().cursor(Cf.ARTIFACT_META, null)) {
        for (; a.valid(); a.next()) {
          artifactCount++;
          byte[] key = a.key();
          String digest = Keys.hex(Keys.compilerOf(key));
          CompilerIdentity id = store.identity(digest);
          String module = moduleNames.get(ByteBuffer.wrap(Keys.graphOf(key)));
          String name = new RepairReport.LostEntry(shortHex(Keys.graphOf(key)), module,
              id == null ? digest.substring(0, 12) : id.shortName(), "").entry();
          ArtifactRecord r;
          try {
            r = Records.decodeArtifact(a.value());
          } catch (IllegalArgumentException e) {
            problem(name, "its record is unreadable (" + e.getMessage() + ")", true);
            unreadableArtifactRecords.add(key);
            continue;
          }
          recomputed.addArtifact(r, 1);
          expectedAccess.add(ByteBuffer.wrap(Keys.access(r.lastAccess(), Keys.KIND_ARTIFACT, key)));
          String why = null;
          if (!graphs.contains(ByteBuffer.wrap(Keys.graphOf(key)))) {
            why = "its graph is not in the cache";
          } else if (id == null) {
            why = "its compiler identity record is missing or damaged";
          }
          if (why != null) {
            problem(name, why, true);
            damagedValues.add(new DamagedValue(null, key, 0, null, name, why));
            continue;
          }
          if (r.status() == EntryStatus.COMPILED) {
            checkValue(Cf.ARTIFACTS, key, r.bytes(), r.sha256(), "bytes", true, name);
          }
          if (r.logStoredBytes() > 0) {
            checkValue(Cf.LOGS, key, r.logStoredBytes(), r.logSha256(), "log", false, name);
          }
        }
      }
      try (Cursor q = store.db().cursor(Cf.REQUEST_META, null)) {
        for (; q.valid(); q.next()) {
          requestCount++;
          byte[] digest = q.key();
          RequestRecord r;
          try {
            r = Records.decodeRequest(q.value());
          } catch (IllegalArgumentException e) {
            problem(requestEntry(digest, null), "its record is unreadable (" + e.getMessage() + ")", true);
            unreadableRequestRecords.add(digest);
            continue;
          }
          platforms.put(ByteBuffer.wrap(digest), r.platformName());
          recomputed.addRequest(r, 1);
          expectedAccess.add(ByteBuffer.wrap(Keys.access(r.lastAccess(), Keys.KIND_REQUEST, digest)));
          String name = requestEntry(digest, r.platformName());
          checkRequest(digest, r, name);
          checkValue(Cf.EXECUTABLES, digest, r.executableBytes(), r.executableSha256(), "executable", false, name);
        }
      }
      long accessEntries = 0;
      try (Cursor c = store.db().cursor(Cf.ACCESS, null)) {
        for (; c.valid(); c.next()) {
          accessEntries++;
          if (!expectedAccess.contains(ByteBuffer.wrap(c.key()))) {
            indexesOutOfStep = true;
          }
        }
      }
      if (accessEntries != expectedAccess.size()) {
        indexesOutOfStep = true;
      }
    } catch (DamagedValueException | DamagedCacheException e) {
      tableDamaged(e instanceof DamagedCacheException d ? d.damage() : e.getMessage());
      return new long[] {graphCount, artifactCount, recomputed.storedBytes(), requestCount};
    }
    if (indexesOutOfStep) {
      problem("access index", "out of step with the records (" + expectedAccess.size() + " records)", false);
    }
    if (!recomputed.sameContents(store.totals())) {
      problem("totals", "out of step with the records", false);
    }
    return new long[] {graphCount, artifactCount, recomputed.storedBytes(), requestCount};
  }

  /** {@code runtime entry pjrt1:1a2b3c4d5e6f (cpu)}: how verify names a request. */
  private static String requestEntry(byte[] digest, String platform) {
    return RepairReport.LostEntry.request(shortKey(digest), platform, "").entry();
  }

  static String shortKey(byte[] digest) {
    return dev.xlac.runtime.RequestKey.VERSION + ":" + shortHex(digest);
  }

  /**
   * The files themselves: every table block's checksum (RocksDB's own check), and every blob file
   * in use: there, with its header and its footer (RocksDB reads the footer before any value, so a
   * truncated blob file makes all its values unreadable, and a compaction that has to move one of
   * them fails). A damaged blob file is a problem of the repair's only (see {@link #repairInPlace}).
   */
  private void checkFiles() {
    try {
      store.db().verifyTables();
    } catch (DamagedValueException e) {
      tableDamaged(e.fileMissing ? "a table file is missing (" + e.getMessage() + ")" : e.getMessage());
    }
    Path dir = store.db().databaseDir();
    for (String f : store.db().liveFiles()) {
      if (!f.endsWith(".blob")) {
        continue;
      }
      Path p = dir.resolve(f);
      String why;
      if (!Files.exists(p)) {
        why = "it is missing";
      } else {
        try {
          BlobFiles.FileScan s = BlobFiles.checkEnds(p);
          why = s.rocksDbCanRead() ? null : s.problem();
        } catch (IOException e) {
          why = "it cannot be read (" + XlacException.reason(e) + ")";
        }
      }
      if (why != null) {
        // Only a problem if a value in use is in it, which the values' own checks find; else it
        // holds nothing but garbage the next compaction drops. A repair compacts and makes sure.
        damagedBlobFiles.put(f, why);
      }
    }
  }

  private void tableDamaged(String why) {
    if (tableDamage == null) {
      tableDamage = why;
      problem("database", "RocksDB reports a damaged table block: " + why, true);
    }
  }

  /**
   * Streams the value, a chunk at a time (no value is held whole), and notes it when it does not
   * read back as its record says. A reader's value removed by a writer since it opened is fine.
   */
  private void checkValue(Cf cf, byte[] key, long size, byte[] sha, String what, boolean plural, String entry) {
    CheckedValue outcome;
    try {
      outcome = CheckedValue.stream(store.values(), cf, key, size, sha, java.io.OutputStream.nullOutputStream());
    } catch (IOException e) {
      throw new IllegalStateException(e); // the null stream does not throw
    }
    String why = switch (outcome) {
      case CheckedValue.Ok ok -> null;
      case CheckedValue.Gone() -> null;
      case CheckedValue.Missing() -> "its " + what + (plural ? " are" : " is") + " missing";
      case CheckedValue.Mismatch() -> "its " + what + (plural ? " fail their" : " fails its") + " checksum";
      case CheckedValue.Corrupt(String detail) -> "RocksDB reports its " + what + " corrupt (" + detail + ")";
    };
    if (why == null) {
      return;
    }
    if (outcome instanceof CheckedValue.Corrupt(String detail) && inTable(detail)) {
      tableDamaged(detail);
    }
    problem(entry, why, true);
    damagedValues.add(new DamagedValue(cf, key, size, sha, entry, why));
  }

  /**
   * A stored request: its value against its checksum, and (read whole: requests are small) decoded into its
   * sections, whose key must be the one it is filed under. A request whose key is another (computed by other rules,
   * or filed under the wrong key) could never be served: it is a problem, dropped by a repair.
   */
  private void checkRequest(byte[] digest, RequestRecord r, String name) {
    if (r.requestStoredBytes() > Store.MAX_ARRAY_BYTES || r.requestRawBytes() > Store.MAX_ARRAY_BYTES) {
      checkValue(Cf.REQUESTS, digest, r.requestStoredBytes(), r.requestSha256(), "request", false, name);
      return;
    }
    CheckedValue outcome = CheckedValue.read(store.values(), Cf.REQUESTS, digest, r.requestStoredBytes(),
        r.requestSha256());
    if (!(outcome instanceof CheckedValue.Ok(byte[] stored))) {
      checkValue(Cf.REQUESTS, digest, r.requestStoredBytes(), r.requestSha256(), "request", false, name);
      return;
    }
    String why;
    try {
      byte[][] sections = RequestEntries.decodeRequest(
          com.github.luben.zstd.Zstd.decompress(stored, Math.toIntExact(r.requestRawBytes())));
      // an entry of an older xlac, under its old key, is intact: it only misses (RequestKey.isKeyOf)
      dev.xlac.runtime.RequestKey key = dev.xlac.runtime.RequestKey.of(sections[0], sections[1], sections[2],
          sections[3]);
      why = new dev.xlac.runtime.RequestKey(digest).isKeyOf(sections[0], sections[1], sections[2], sections[3])
          ? null : "its request's key is " + key.text() + " (computed differently, or filed under another key)";
    } catch (RuntimeException e) {
      why = "its request does not decode (" + e.getMessage() + ")";
    }
    if (why != null) {
      problem(name, why, true);
      foreignRequests.put(ByteBuffer.wrap(digest), why);
    }
  }

  /** Whether RocksDB's message names a table block rather than a blob. */
  private static boolean inTable(String detail) {
    return detail != null && (detail.contains(".sst") || detail.contains("block checksum"));
  }

  // ---------------------------------------------------------------- repair in place

  /** Writes again, from the blob files, every damaged value whose record there is intact. */
  private void recoverValues() {
    List<DamagedValue> recoverable = damagedValues.stream().filter(d -> d.cf() != null).toList();
    if (recoverable.isEmpty()) {
      return;
    }
    BlobFiles blobs;
    try {
      blobs = BlobFiles.scanDirectory(store.db().databaseDir());
    } catch (IOException e) {
      return; // nothing to recover from: drop them
    }
    Map<Cf, Integer> ids = new EnumMap<>(Cf.class);
    for (Cf cf : Cf.values()) {
      ids.put(cf, store.db().familyId(cf));
    }
    ValueSalvage salvage = new ValueSalvage(List.of(store.db()), blobs, ids);
    List<DamagedValue> recovered = new ArrayList<>();
    for (DamagedValue d : recoverable) {
      ValueSalvage.Copy c = salvage.copy(d.cf(), d.key(), d.size(), d.sha(),
          size -> store.values().writer(d.cf(), d.key(), size, true));
      if (c == null) {
        continue;
      }
      try (StoredValues.ValueWriter w = c.writer()) {
        store.commit(true, txn -> {
          txn.commitValue(w);
          return null;
        });
      }
      recovered.add(d);
      setAction(d.entry(), d.why(), "recovered", "; read back from its blob file and written again");
    }
    damagedValues.removeAll(recovered);
  }

  /**
   * Drops every entry with a value that could not be recovered, and unreadable records; returns what
   * was lost. An artifact whose log alone is lost keeps its bytes and loses the log.
   */
  private List<RepairReport.LostEntry> dropDamaged() {
    Set<ByteBuffer> graphs = new java.util.TreeSet<>();
    Set<ByteBuffer> artifacts = new java.util.TreeSet<>();
    Set<ByteBuffer> logsOnly = new java.util.TreeSet<>();
    Set<ByteBuffer> requests = new java.util.TreeSet<>();
    for (DamagedValue d : damagedValues) {
      if (d.cf() == Cf.REQUESTS || d.cf() == Cf.EXECUTABLES) {
        requests.add(ByteBuffer.wrap(d.key()));
      } else if (d.cf() == Cf.GRAPHS) {
        graphs.add(ByteBuffer.wrap(d.key()));
      } else if (d.cf() == Cf.LOGS) {
        logsOnly.add(ByteBuffer.wrap(d.key()));
      } else {
        artifacts.add(ByteBuffer.wrap(d.key()));
      }
    }
    logsOnly.removeAll(artifacts);
    for (DamagedValue d : damagedValues) {
      if (d.cf() == Cf.LOGS && logsOnly.contains(ByteBuffer.wrap(d.key()))) {
        setAction(d.entry(), d.why(), "repaired", "; the entry is kept without its log");
      }
    }
    List<RepairReport.LostEntry> lost = new ArrayList<>();
    for (ByteBuffer fp : graphs) {
      lost.add(new RepairReport.LostEntry(shortHex(fp.array()), moduleNames.get(fp), null, "its module could not be read"));
      try (Cursor a = store.db().cursor(Cf.ARTIFACT_META, fp.array())) {
        for (; a.valid() && Keys.startsWith(a.key(), fp.array()); a.next()) {
          artifacts.remove(ByteBuffer.wrap(a.key()));
          lost.add(new RepairReport.LostEntry(shortHex(fp.array()), moduleNames.get(fp), compiler(a.key()),
              "its graph's module could not be read"));
        }
      }
    }
    for (ByteBuffer key : artifacts) {
      String why = damagedValues.stream().filter(d -> java.util.Arrays.equals(d.key(), key.array()))
          .map(DamagedValue::why).findFirst().orElse("");
      lost.add(new RepairReport.LostEntry(shortHex(Keys.graphOf(key.array())),
          moduleNames.get(ByteBuffer.wrap(Keys.graphOf(key.array()))), compiler(key.array()), why));
    }
    Set<ByteBuffer> damagedRequests = new java.util.TreeSet<>(requests);
    requests.addAll(foreignRequests.keySet());
    for (ByteBuffer digest : requests) {
      if (!damagedRequests.contains(digest)) {
        lost.add(RepairReport.LostEntry.request(shortKey(digest.array()), platforms.get(digest),
            foreignRequests.get(digest)));
        continue;
      }
      String why = damagedValues.stream().filter(d -> java.util.Arrays.equals(d.key(), digest.array())
          && (d.cf() == Cf.REQUESTS || d.cf() == Cf.EXECUTABLES)).map(DamagedValue::why).findFirst().orElse("");
      lost.add(RepairReport.LostEntry.request(shortKey(digest.array()), platforms.get(digest), why));
    }
    store.commit(false, txn -> {
      for (ByteBuffer digest : requests) {
        txn.removeRequest(digest.array());
      }
      for (byte[] digest : unreadableRequestRecords) {
        store.noteRequestsRemoved();
        txn.delete(Cf.REQUEST_META, digest);
        txn.deleteValue(Cf.REQUESTS, digest, -1);
        txn.deleteValue(Cf.EXECUTABLES, digest, -1);
      }
      for (ByteBuffer key : logsOnly) {
        ArtifactRecord r = txn.artifact(key.array());
        if (r != null && !graphs.contains(ByteBuffer.wrap(Keys.graphOf(key.array())))) {
          txn.writeArtifact(key.array(), new ArtifactRecord(r.status(), r.bytes(), r.sha256(), r.compileMillis(),
              r.created(), r.lastAccess(), r.failureKind(), r.failureMessage(), 0, 0, null), null, null);
        }
      }
      for (ByteBuffer fp : graphs) {
        txn.removeGraph(fp.array());
      }
      for (ByteBuffer key : artifacts) {
        txn.removeArtifact(key.array());
      }
      for (byte[] fp : unreadableGraphRecords) {
        txn.delete(Cf.GRAPH_META, fp);
        txn.deleteValue(Cf.GRAPHS, fp, -1); // size unknown: whole and chunked
      }
      for (byte[] key : unreadableArtifactRecords) {
        txn.delete(Cf.ARTIFACT_META, key);
        txn.deleteValue(Cf.ARTIFACTS, key, -1);
        txn.deleteValue(Cf.LOGS, key, -1);
      }
      return null;
    });
    for (byte[] digest : unreadableRequestRecords) {
      lost.add(RepairReport.LostEntry.request(shortKey(digest), null, "its record could not be read"));
    }
    for (byte[] fp : unreadableGraphRecords) {
      lost.add(new RepairReport.LostEntry(shortHex(fp), null, null, "its record could not be read"));
    }
    for (byte[] key : unreadableArtifactRecords) {
      lost.add(new RepairReport.LostEntry(shortHex(Keys.graphOf(key)), moduleNames.get(ByteBuffer.wrap(Keys.graphOf(key))),
          compiler(key), "its record could not be read"));
    }
    // Orphans of removed graphs and unreadable records can leave artifacts without a graph: drop them too.
    store.commit(false, txn -> {
      try (Cursor a = store.db().cursor(Cf.ARTIFACT_META, null)) {
        for (; a.valid(); a.next()) {
          if (store.readGraphRecord(Keys.graphOf(a.key())) == null) {
            txn.removeArtifact(a.key());
          }
        }
      }
      return null;
    });
    return lost;
  }

  /**
   * After the compaction: a blob file RocksDB cannot read that is still in use holds values some
   * live reference points to (none of the records' values, which were all checked: a value no record
   * names), and a later compaction would trip over it. Null when there is none.
   */
  private String damagedBlobFileStillInUse() {
    Set<String> live = new HashSet<>(store.db().liveFiles());
    Path dir = store.db().databaseDir();
    for (String f : live) {
      if (!f.endsWith(".blob")) {
        continue;
      }
      Path p = dir.resolve(f);
      try {
        if (!Files.exists(p) || !BlobFiles.checkEnds(p).rocksDbCanRead()) {
          return "blob file " + f + " is damaged and still in use";
        }
      } catch (IOException e) {
        return "blob file " + f + " cannot be read (" + XlacException.reason(e) + ")";
      }
    }
    return null;
  }

  /** Rewrites the access index and the totals from the records, in one batch. */
  private void rebuildIndexes() {
    store.commit(false, txn -> {
      txn.deleteAll(Cf.ACCESS);
      Totals t = new Totals();
      t.copyCountersFrom(txn.totals());
      try (Cursor g = store.db().cursor(Cf.GRAPH_META, null)) {
        for (; g.valid(); g.next()) {
          GraphRecord r = Records.decodeGraph(g.value());
          txn.put(Cf.ACCESS, Keys.access(r.lastAccess(), Keys.KIND_GRAPH, g.key()),
              Records.accessValue(r.storedBytes(), EntryStatus.PENDING, null));
          t.addGraph(r, 1);
        }
      }
      try (Cursor a = store.db().cursor(Cf.ARTIFACT_META, null)) {
        for (; a.valid(); a.next()) {
          ArtifactRecord r = Records.decodeArtifact(a.value());
          txn.put(Cf.ACCESS, Keys.access(r.lastAccess(), Keys.KIND_ARTIFACT, a.key()),
              Records.accessValue(r.storedBytes(), r.status(), Keys.compilerOf(a.key())));
          t.addArtifact(r, 1);
        }
      }
      try (Cursor q = store.db().cursor(Cf.REQUEST_META, null)) {
        for (; q.valid(); q.next()) {
          RequestRecord r = Records.decodeRequest(q.value());
          txn.put(Cf.ACCESS, Keys.access(r.lastAccess(), Keys.KIND_REQUEST, q.key()),
              Records.accessValue(r.storedBytes(), EntryStatus.COMPILED, null));
          t.addRequest(r, 1);
        }
      }
      txn.replaceTotals(t);
      return null;
    });
  }

  private String compiler(byte[] artifactKey) {
    String digest = Keys.hex(Keys.compilerOf(artifactKey));
    CompilerIdentity id = store.identity(digest);
    return id == null ? digest.substring(0, 12) : id.shortName();
  }

  private void problem(String entry, String description, boolean damage) {
    problems.add(new VerifyReport.Problem(entry, description, damage));
  }

  private void setAction(String entry, String description, String action, String addition) {
    for (int i = 0; i < problems.size(); i++) {
      VerifyReport.Problem p = problems.get(i);
      if (p.entry().equals(entry) && p.description().equals(description) && p.action() == null) {
        problems.set(i, new VerifyReport.Problem(entry, description + addition, true, action));
        return;
      }
    }
  }

  private static String shortHex(byte[] b) {
    return Keys.hex(b).substring(0, 12);
  }
}
