package dev.xlac.cache;

import dev.xlac.cache.Records.ArtifactRecord;
import dev.xlac.cache.Records.GraphRecord;
import dev.xlac.cache.RocksDbStore.Cf;
import dev.xlac.cache.RocksDbStore.Cursor;
import dev.xlac.core.CompilerIdentity;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Checks every stored value against its checksum and every index against the records, and
 * repairs on request: damaged entries are dropped (a damaged graph with its artifacts, since an
 * artifact must not outlive its graph) and the access index and totals rebuilt from the records,
 * each step one atomic batch. Values are read by key from their records; the blob families are
 * never scanned, since an iterator would load every blob a second time.
 */
final class CacheVerifier {
  private final CacheStore store;
  private final List<VerifyReport.Problem> problems = new ArrayList<>();
  private final List<byte[]> damagedGraphs = new ArrayList<>();
  private final List<byte[]> damagedArtifacts = new ArrayList<>();
  private final List<byte[]> unreadableGraphRecords = new ArrayList<>();
  private final List<byte[]> unreadableArtifactRecords = new ArrayList<>();
  private boolean indexesOutOfStep;

  CacheVerifier(CacheStore store) {
    this.store = store;
  }

  VerifyReport verify(boolean repair) {
    long graphCount = 0;
    long artifactCount = 0;
    Set<ByteBuffer> graphs = new HashSet<>();
    Totals recomputed = new Totals();
    Set<ByteBuffer> expectedAccess = new HashSet<>();
    try (Cursor g = store.db.cursor(Cf.GRAPH_META, null)) {
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
        recomputed.addGraph(r, 1);
        expectedAccess.add(ByteBuffer.wrap(Keys.access(r.lastAccess(), Keys.KIND_GRAPH, fp)));
        String why = checkValue(Cf.GRAPHS, fp, r.storedBytes(), r.storedSha256(), "module", false);
        if (why != null) {
          problem("graph " + shortHex(fp) + " (" + r.moduleName() + ")", why, true);
          damagedGraphs.add(fp);
        }
      }
    }
    try (Cursor a = store.db.cursor(Cf.ARTIFACT_META, null)) {
      for (; a.valid(); a.next()) {
        artifactCount++;
        byte[] key = a.key();
        String digest = Keys.hex(Keys.compilerOf(key));
        CompilerIdentity id = store.identity(digest);
        String name = "artifact " + shortHex(Keys.graphOf(key)) + "/" + (id == null ? digest.substring(0, 12) : id.shortName());
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
        } else if (r.status() == EntryStatus.COMPILED) {
          why = checkValue(Cf.ARTIFACTS, key, r.bytes(), r.sha256(), "bytes", true);
        }
        if (why == null && r.logStoredBytes() > 0) {
          why = checkValue(Cf.LOGS, key, r.logStoredBytes(), r.logSha256(), "log", false);
        }
        if (why != null) {
          problem(name, why, true);
          damagedArtifacts.add(key);
        }
      }
    }
    long accessEntries = 0;
    try (Cursor c = store.db.cursor(Cf.ACCESS, null)) {
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
    if (indexesOutOfStep) {
      problem("access index", "out of step with the records (" + accessEntries + " entries for "
          + expectedAccess.size() + " records)", false);
    }
    if (!recomputed.sameContents(store.currentTotals())) {
      problem("totals", "out of step with the records", false);
    }
    boolean repaired = false;
    if (repair && !problems.isEmpty()) {
      repairAll();
      repaired = true;
    }
    return new VerifyReport(graphCount, artifactCount, recomputed.storedBytes(), List.copyOf(problems), repaired);
  }

  /**
   * Null when the value is present and matches (or, for a reader, was removed by a writer since it
   * opened), else why not. The value is streamed, a chunk at a time, so no value is held whole.
   */
  private String checkValue(Cf cf, byte[] key, long size, byte[] sha, String what, boolean plural) {
    CheckedValue outcome;
    try {
      outcome = CheckedValue.stream(store.values, cf, key, size, sha, java.io.OutputStream.nullOutputStream());
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e); // the null stream does not throw
    }
    return switch (outcome) {
      case CheckedValue.Ok ok -> null;
      case CheckedValue.Gone() -> null;
      case CheckedValue.Missing() -> "its " + what + (plural ? " are" : " is") + " missing";
      case CheckedValue.Mismatch() -> "its " + what + (plural ? " fail their" : " fails its") + " checksum";
      case CheckedValue.Corrupt(String detail) -> "RocksDB reports its " + what + " corrupt (" + detail + ")";
    };
  }

  private void repairAll() {
    store.commit(false, txn -> {
      for (byte[] fp : damagedGraphs) {
        txn.removeGraph(fp);
      }
      for (byte[] key : damagedArtifacts) {
        txn.removeArtifact(key);
      }
      for (byte[] fp : unreadableGraphRecords) {
        store.db.delete(txn.batch, Cf.GRAPH_META, fp);
        store.values.delete(txn.batch, Cf.GRAPHS, fp, -1); // size unknown: whole and chunked
      }
      for (byte[] key : unreadableArtifactRecords) {
        store.db.delete(txn.batch, Cf.ARTIFACT_META, key);
        store.values.delete(txn.batch, Cf.ARTIFACTS, key, -1);
        store.values.delete(txn.batch, Cf.LOGS, key, -1);
      }
      return null;
    });
    // Orphans of removed graphs and unreadable records can leave artifacts without a graph: drop them too.
    store.commit(false, txn -> {
      try (Cursor a = store.db.cursor(Cf.ARTIFACT_META, null)) {
        for (; a.valid(); a.next()) {
          if (store.readGraphRecord(Keys.graphOf(a.key())) == null) {
            txn.removeArtifact(a.key());
          }
        }
      }
      return null;
    });
    rebuildIndexes();
    store.db.syncWal();
  }

  /** Rewrites the access index and the totals from the records, in one batch. */
  private void rebuildIndexes() {
    store.commit(false, txn -> {
      store.db.deleteAll(txn.batch, Cf.ACCESS);
      Totals t = new Totals();
      t.copyCountersFrom(txn.totals);
      try (Cursor g = store.db.cursor(Cf.GRAPH_META, null)) {
        for (; g.valid(); g.next()) {
          GraphRecord r = Records.decodeGraph(g.value());
          store.db.put(txn.batch, Cf.ACCESS, Keys.access(r.lastAccess(), Keys.KIND_GRAPH, g.key()),
              Records.accessValue(r.storedBytes(), EntryStatus.PENDING, null));
          t.addGraph(r, 1);
        }
      }
      try (Cursor a = store.db.cursor(Cf.ARTIFACT_META, null)) {
        for (; a.valid(); a.next()) {
          ArtifactRecord r = Records.decodeArtifact(a.value());
          store.db.put(txn.batch, Cf.ACCESS, Keys.access(r.lastAccess(), Keys.KIND_ARTIFACT, a.key()),
              Records.accessValue(r.storedBytes(), r.status(), Keys.compilerOf(a.key())));
          t.addArtifact(r, 1);
        }
      }
      txn.totals = t;
      return null;
    });
  }

  private void problem(String entry, String description, boolean damage) {
    problems.add(new VerifyReport.Problem(entry, description, damage));
  }

  private static String shortHex(byte[] b) {
    return Keys.hex(b).substring(0, 12);
  }
}
