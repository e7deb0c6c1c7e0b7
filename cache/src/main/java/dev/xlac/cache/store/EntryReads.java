package dev.xlac.cache.store;

import com.github.luben.zstd.Zstd;
import dev.xlac.cache.Artifact;
import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.GraphLog;
import dev.xlac.cache.store.Records.ArtifactRecord;
import dev.xlac.cache.store.Records.GraphRecord;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reads of graphs and entries, checksum-verified: a damaged value is a miss, counted and reported.
 * Artifact loads go through {@link ArtifactMemory} (single flight); lookups count hits and misses
 * ({@link UsageCounters}) and record accesses (approximate LRU).
 */
public final class EntryReads {
  private final Store store;

  EntryReads(Store store) {
    this.store = store;
  }

  public Optional<GraphInfo> graph(GraphFingerprint fingerprint) {
    byte[] fp = fingerprint.digest();
    GraphRecord r = store.readGraphRecord(fp);
    return r == null ? Optional.empty() : Optional.of(Records.info(fp, r));
  }

  /** The serialized HloModuleProto of a stored graph, checksum-verified; empty when absent or damaged (reported). */
  public Optional<byte[]> readGraph(GraphFingerprint fingerprint) {
    byte[] fp = fingerprint.digest();
    GraphRecord r = store.readGraphRecord(fp);
    if (r == null) {
      return Optional.empty();
    }
    String damage;
    try {
      switch (CheckedValue.read(store.values, Cf.GRAPHS, fp, r.storedBytes(), r.storedSha256())) {
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
    store.reportDamage("graph " + fingerprint.shortForm() + " (" + r.moduleName() + ")", damage);
    return Optional.empty();
  }

  /** Every stored graph, in fingerprint order. */
  public List<GraphInfo> graphs() {
    List<GraphInfo> out = new ArrayList<>();
    try (Cursor g = store.db.cursor(Cf.GRAPH_META, null)) {
      for (; g.valid(); g.next()) {
        out.add(Records.info(g.key(), Records.decodeGraph(g.value())));
      }
    }
    return out;
  }

  private interface EntryVisitor {
    void visit(byte[] key, ArtifactInfo info, ArtifactRecord record);
  }

  /**
   * The artifact for {@code key}, checksum-verified. An entry that is absent, failed, or whose
   * bytes are missing or fail their checksum is a miss (empty); damage is also reported.
   * Concurrent calls for one key share one load.
   */
  public Optional<Artifact> getArtifact(ArtifactKey key) {
    store.pinArtifact(key);
    Artifact a = singleFlight(key);
    count(a);
    return Optional.ofNullable(a);
  }

  private Artifact singleFlight(ArtifactKey key) {
    return store.memory.get(key, cached -> {
      long now = store.clock.millis();
      long last = cached.touched().get();
      if (now - last >= store.TOUCH_INTERVAL_MILLIS && cached.touched().compareAndSet(last, now)) {
        byte[] kb = key.bytes();
        ArtifactRecord rec = store.readArtifactRecord(kb);
        if (rec != null) {
          touch(key, kb, rec);
        }
      }
    }, this::load, store.clock::millis);
  }

  private void count(Artifact a) {
    count(a != null, a == null ? 0 : a.compileTime().toMillis());
  }

  private void count(boolean hit, long savedMillis) {
    store.pending.lookup(hit, savedMillis);
  }

  /** Reads and verifies one artifact from the database; null on a miss (damage is reported). */
  private Artifact load(ArtifactKey key) {
    byte[] kb = key.bytes();
    ArtifactRecord rec = store.readArtifactRecord(kb);
    if (rec == null || rec.status() != EntryStatus.COMPILED) {
      return null;
    }
    if (rec.bytes() > store.MAX_ARRAY_BYTES) {
      throw XlacException.badInput("artifact " + key + " in cache " + store.dir + " is " + rec.bytes()
          + " bytes, more than one array can hold (" + store.MAX_ARRAY_BYTES + "); read it as a stream (export or materialize)");
    }
    CheckedValue read = CheckedValue.read(store.values, Cf.ARTIFACTS, kb, rec.bytes(), rec.sha256());
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
      store.pending.damagedRead();
      store.notices.accept("cache " + store.dir + ": artifact " + key + " is damaged: " + damage + "; " + then);
    }
  }

  /**
   * Streams one compiled artifact into {@code out}, a chunk at a time, checking it against its
   * SHA-256 as it goes: for copying artifacts of any size out of the cache (a Neuron layout). Not
   * counted as a hit or miss, not kept in the artifact memory. Returns false when there is no compiled artifact
   * or it is damaged (reported); then {@code out} may hold part of it, which the caller discards.
   */
  public boolean readArtifact(ArtifactKey key, java.io.OutputStream out) throws java.io.IOException {
    byte[] kb = key.bytes();
    ArtifactRecord rec = store.readArtifactRecord(kb);
    if (rec == null || rec.status() != EntryStatus.COMPILED) {
      return false;
    }
    CheckedValue read = CheckedValue.stream(store.values, Cf.ARTIFACTS, kb, rec.bytes(), rec.sha256(), out);
    artifactDamage(key, read, "fail their checksum", "treated as a miss (run 'xlac cache verify --repair')");
    return read instanceof CheckedValue.Ok;
  }

  private void touch(ArtifactKey key, byte[] kb, ArtifactRecord rec) {
    long now = store.clock.millis();
    if (!store.writable || now - rec.lastAccess() < store.TOUCH_INTERVAL_MILLIS) {
      return;
    }
    try {
      store.commit(false, txn -> {
        ArtifactRecord cur = txn.artifact(kb);
        if (cur != null && cur.status() == EntryStatus.COMPILED) {
          txn.writeArtifact(kb, cur.withLastAccess(now), null, null);
        }
        return null;
      });
    } catch (XlacException e) {
      store.notices.accept("cannot record the access to " + key + ": " + e.getMessage());
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
    store.pinArtifact(kb);
    ArtifactRecord r = store.readArtifactRecord(kb);
    if (r == null || r.status() != EntryStatus.COMPILED) {
      count(false, 0);
      return r == null ? Optional.empty() : Optional.of(Records.info(key, r));
    }
    CheckedValue probe = CheckedValue.probe(store.values, Cf.ARTIFACTS, kb, r.bytes(), r.sha256());
    boolean hit = probe instanceof CheckedValue.Ok;
    count(hit, hit ? r.compileMillis() : 0);
    artifactDamage(key, probe, "are not of the recorded length", "treated as a miss, so it is compiled again");
    if (hit) {
      touch(key, kb, r); // a run that finds it cached uses it: least recently used order must say so
    }
    return hit ? Optional.of(Records.info(key, r)) : Optional.empty();
  }

  /** The metadata of one entry (compiled or failed), without reading its bytes. */
  public Optional<ArtifactInfo> artifactInfo(ArtifactKey key) {
    ArtifactRecord r = store.readArtifactRecord(key.bytes());
    return r == null ? Optional.empty() : Optional.of(Records.info(key, r));
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
    ArtifactRecord r = store.readArtifactRecord(kb);
    return r == null ? "" : readLog(kb, r);
  }

  /** The graph's entries (compiled or failed), one per compiler, metadata only: no bytes or logs are read. */
  public List<ArtifactInfo> entries(GraphFingerprint fingerprint) {
    List<ArtifactInfo> out = new ArrayList<>();
    forEachEntry(fingerprint, (kb, info, r) -> out.add(info));
    return out;
  }

  /** The graph's artifact records in key order; one whose compiler identity record is missing is left out (verify reports it). */
  private void forEachEntry(GraphFingerprint fingerprint, EntryVisitor visitor) {
    byte[] fp = fingerprint.digest();
    try (Cursor c = store.db.cursor(Cf.ARTIFACT_META, fp)) {
      for (; c.valid() && Keys.startsWith(c.key(), fp); c.next()) {
        byte[] kb = c.key();
        CompilerIdentity id = store.identity(Keys.hex(Keys.compilerOf(kb)));
        if (id == null) {
          continue;
        }
        ArtifactRecord r = Records.decodeArtifact(c.value());
        visitor.visit(kb, Records.info(new ArtifactKey(fingerprint, id), r), r);
      }
    }
  }

  private String readLog(byte[] kb, ArtifactRecord r) {
    if (r.logStoredBytes() == 0) {
      return "";
    }
    try {
      if (r.logStoredBytes() > store.MAX_ARRAY_BYTES) {
        return "(the log is too large to show: " + r.logStoredBytes() + " bytes compressed)";
      }
      CheckedValue read = CheckedValue.read(store.values, Cf.LOGS, kb, r.logStoredBytes(), r.logSha256());
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
}
