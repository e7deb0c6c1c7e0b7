package dev.xlac.cache.store;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.store.Records.ArtifactRecord;
import dev.xlac.cache.store.Records.GraphRecord;
import dev.xlac.cache.store.Records.RequestRecord;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.XlacException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import org.rocksdb.WriteBatch;

/**
 * The records of one batch. Reads go through an overlay of what the batch already wrote, and
 * every write keeps the access index and the totals in step with the records, so a batch is
 * always self-consistent however many changes it holds.
 */
public final class Txn {
  private static final Object REMOVED = new Object();
  private final Store store;
  final WriteBatch batch;
  Totals totals;
  private final java.util.Map<ByteBuffer, Object> graphs = new java.util.HashMap<>();
  private final java.util.TreeMap<ByteBuffer, Object> artifacts = new java.util.TreeMap<>();
  private final java.util.Map<ByteBuffer, Object> requests = new java.util.HashMap<>();
  private final Set<String> identitiesWritten = new HashSet<>();
  private final List<StoredValues.ValueWriter> valueWriters = new ArrayList<>();

  Txn(Store store, WriteBatch batch, Totals totals) {
    this.store = store;
    this.batch = batch;
    this.totals = totals;
  }

  public GraphRecord graph(byte[] fp) {
    Object o = graphs.get(ByteBuffer.wrap(fp));
    if (o != null) {
      return o == REMOVED ? null : (GraphRecord) o;
    }
    return store.readGraphRecord(fp);
  }

  public ArtifactRecord artifact(byte[] key) {
    Object o = artifacts.get(ByteBuffer.wrap(key));
    if (o != null) {
      return o == REMOVED ? null : (ArtifactRecord) o;
    }
    return store.readArtifactRecord(key);
  }

  public void requireGraph(ArtifactKey key) {
    if (graph(key.graph().digest()) == null) {
      throw XlacException.badInput("graph " + key.graph() + " is not in cache " + store.dir
          + "; store the graph before its artifacts");
    }
  }

  public void putIdentity(CompilerIdentity id) {
    putIdentityText(id.digest(), id.encode().getBytes(StandardCharsets.UTF_8));
  }

  public void putIdentityText(String digest, byte[] text) {
    if (identitiesWritten.add(digest) && store.identity(digest) == null) {
      store.db.put(batch, Cf.IDENTITIES, HexFormat.of().parseHex(digest), text);
    }
  }

  /**
   * Adds the rest of a value written in pieces to this batch: the value belongs to the record this
   * batch writes, once it is written. Write the record with a null value in the same batch.
   */
  public void commitValue(StoredValues.ValueWriter w) {
    w.addTo(batch);
    valueWriters.add(w);
  }

  /** Writes a graph record (and its stored module when {@code stored} is not null). */
  public void writeGraph(byte[] fp, GraphRecord rec, byte[] stored) {
    store.written(Keys.KIND_GRAPH, fp);
    GraphRecord old = graph(fp);
    if (old != null) {
      store.db.delete(batch, Cf.ACCESS, Keys.access(old.lastAccess(), Keys.KIND_GRAPH, fp));
      totals.addGraph(old, -1);
    }
    store.db.put(batch, Cf.GRAPH_META, fp, Records.encode(rec));
    if (stored != null) {
      store.values.put(batch, Cf.GRAPHS, fp, stored, old == null ? -1 : old.storedBytes());
    }
    store.db.put(batch, Cf.ACCESS, Keys.access(rec.lastAccess(), Keys.KIND_GRAPH, fp),
        Records.accessValue(rec.storedBytes(), EntryStatus.PENDING, null));
    totals.addGraph(rec, 1);
    graphs.put(ByteBuffer.wrap(fp.clone()), rec);
  }

  /** Keeps a graph's last access at least as recent as its artifacts', so LRU removes artifacts first. */
  public void touchGraph(byte[] fp, long now) {
    GraphRecord g = graph(fp);
    if (g != null && g.lastAccess() < now) {
      writeGraph(fp, g.withLastAccess(now), null);
    }
  }

  /**
   * Writes an artifact record; {@code bytes} and {@code storedLog} replace the stored values when
   * not null. A failed record drops any stored bytes; a record without a log drops a stored log.
   */
  public void writeArtifact(byte[] key, ArtifactRecord rec, byte[] bytes, byte[] storedLog) {
    store.written(Keys.KIND_ARTIFACT, key);
    ArtifactRecord old = artifact(key);
    if (old != null) {
      store.db.delete(batch, Cf.ACCESS, Keys.access(old.lastAccess(), Keys.KIND_ARTIFACT, key));
      totals.addArtifact(old, -1);
    }
    store.db.put(batch, Cf.ARTIFACT_META, key, Records.encode(rec));
    long oldBytes = old != null && old.status() == EntryStatus.COMPILED ? old.bytes() : -1;
    if (bytes != null) {
      store.values.put(batch, Cf.ARTIFACTS, key, bytes, oldBytes);
    } else if (rec.status() == EntryStatus.FAILED && oldBytes >= 0) {
      store.values.delete(batch, Cf.ARTIFACTS, key, oldBytes);
    }
    long oldLog = old != null && old.logStoredBytes() > 0 ? old.logStoredBytes() : -1;
    if (storedLog != null) {
      store.values.put(batch, Cf.LOGS, key, storedLog, oldLog);
    } else if (rec.logStoredBytes() == 0 && oldLog >= 0) {
      store.values.delete(batch, Cf.LOGS, key, oldLog);
    }
    store.db.put(batch, Cf.ACCESS, Keys.access(rec.lastAccess(), Keys.KIND_ARTIFACT, key),
        Records.accessValue(rec.storedBytes(), rec.status(), Keys.compilerOf(key)));
    totals.addArtifact(rec, 1);
    artifacts.put(ByteBuffer.wrap(key.clone()), rec);
    touchGraph(Keys.graphOf(key), rec.lastAccess());
  }

  /** Removes an artifact entry; returns the bytes it occupied. */
  public long removeArtifact(byte[] key) {
    ArtifactRecord old = artifact(key);
    if (old == null) {
      return 0;
    }
    store.db.delete(batch, Cf.ARTIFACT_META, key);
    store.values.delete(batch, Cf.ARTIFACTS, key, old.bytes());
    store.values.delete(batch, Cf.LOGS, key, old.logStoredBytes());
    store.db.delete(batch, Cf.ACCESS, Keys.access(old.lastAccess(), Keys.KIND_ARTIFACT, key));
    totals.addArtifact(old, -1);
    artifacts.put(ByteBuffer.wrap(key.clone()), REMOVED);
    return old.storedBytes();
  }

  /** Removes a graph and every artifact made from it; returns the bytes they occupied. */
  public long removeGraph(byte[] fp) {
    GraphRecord old = graph(fp);
    if (old == null) {
      return 0;
    }
    long freed = 0;
    java.util.TreeSet<ByteBuffer> keys = new java.util.TreeSet<>();
    try (Cursor c = store.db.cursor(Cf.ARTIFACT_META, fp)) {
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
    store.db.delete(batch, Cf.GRAPH_META, fp);
    store.values.delete(batch, Cf.GRAPHS, fp, old.storedBytes());
    store.db.delete(batch, Cf.ACCESS, Keys.access(old.lastAccess(), Keys.KIND_GRAPH, fp));
    totals.addGraph(old, -1);
    graphs.put(ByteBuffer.wrap(fp.clone()), REMOVED);
    return freed + old.storedBytes();
  }

  public RequestRecord request(byte[] digest) {
    Object o = requests.get(ByteBuffer.wrap(digest));
    if (o != null) {
      return o == REMOVED ? null : (RequestRecord) o;
    }
    return store.readRequestRecord(digest);
  }

  /**
   * Writes a request record (schema version 4); {@code storedRequest} and {@code executable} replace the stored
   * values when not null (a value written in pieces is added with {@link #commitValue}).
   */
  public void writeRequest(byte[] digest, RequestRecord rec, byte[] storedRequest, byte[] executable) {
    store.written(Keys.KIND_REQUEST, digest);
    RequestRecord old = request(digest);
    if (old != null) {
      store.db.delete(batch, Cf.ACCESS, Keys.access(old.lastAccess(), Keys.KIND_REQUEST, digest));
      totals.addRequest(old, -1);
    }
    store.db.put(batch, Cf.REQUEST_META, digest, Records.encode(rec));
    if (storedRequest != null) {
      store.values.put(batch, Cf.REQUESTS, digest, storedRequest, old == null ? -1 : old.requestStoredBytes());
    }
    if (executable != null) {
      store.values.put(batch, Cf.EXECUTABLES, digest, executable, old == null ? -1 : old.executableBytes());
    }
    store.db.put(batch, Cf.ACCESS, Keys.access(rec.lastAccess(), Keys.KIND_REQUEST, digest),
        Records.accessValue(rec.storedBytes(), EntryStatus.COMPILED, null));
    totals.addRequest(rec, 1);
    requests.put(ByteBuffer.wrap(digest.clone()), rec);
  }

  /** Removes a request and its executable; returns the bytes they occupied. */
  public long removeRequest(byte[] digest) {
    RequestRecord old = request(digest);
    if (old == null) {
      return 0;
    }
    store.noteRequestsRemoved();
    store.db.delete(batch, Cf.REQUEST_META, digest);
    store.values.delete(batch, Cf.REQUESTS, digest, old.requestStoredBytes());
    store.values.delete(batch, Cf.EXECUTABLES, digest, old.executableBytes());
    store.db.delete(batch, Cf.ACCESS, Keys.access(old.lastAccess(), Keys.KIND_REQUEST, digest));
    totals.addRequest(old, -1);
    requests.put(ByteBuffer.wrap(digest.clone()), REMOVED);
    return old.storedBytes();
  }

  /** Counts compiles the runtime served and the compile time they saved (schema version 4). */
  public void countRuntimeHits(long hits, long savedMillis) {
    totals.runtimeHits += hits;
    totals.runtimeSavedMillis += savedMillis;
  }

  /** Writes a record of the meta family (a setting). */
  public void putMeta(byte[] key, byte[] value) {
    store.db.put(batch, RocksDbStore.Cf.META, key, value);
  }

  /** Deletes a record of the meta family (a setting). */
  public void deleteMeta(byte[] key) {
    store.db.delete(batch, RocksDbStore.Cf.META, key);
  }

  /** Counts one automatic cleanup in the totals ({@code cache stat}). */
  public void countCleanup() {
    totals.cleanups++;
  }

  /** After the batch was written: the values written in pieces for it belong to its records now. */
  /** The totals this batch commits (a repair copies counters into them). */
  public Totals totals() {
    return totals;
  }

  /** Commits {@code recomputed} as the totals: a repair's, rebuilt from the records. */
  public void replaceTotals(Totals recomputed) {
    totals = recomputed;
  }

  /** A raw write of one record (a repair's rebuilt index entries, a salvage's settings). */
  public void put(Cf cf, byte[] key, byte[] value) {
    store.db.put(batch, cf, key, value);
  }

  /** A raw delete of one record: a repair's unreadable records, whose removal the record itself cannot drive. */
  public void delete(Cf cf, byte[] key) {
    store.db.delete(batch, cf, key);
  }

  /** Deletes every record of {@code cf} (a repair rebuilds an index). */
  public void deleteAll(Cf cf) {
    store.db.deleteAll(batch, cf);
  }

  /** Deletes a stored value, whole or chunked ({@code size} -1: unknown, both). */
  public void deleteValue(Cf cf, byte[] key, long size) {
    store.values.delete(batch, cf, key, size);
  }

  void committed() {
    valueWriters.forEach(StoredValues.ValueWriter::committed);
  }
}
