package dev.xlac.cache.store;

import com.github.luben.zstd.Zstd;
import dev.xlac.cache.Artifact;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.NewFailure;
import dev.xlac.cache.store.Records.ArtifactRecord;
import dev.xlac.cache.store.RocksDbStore.Cf;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Artifact writes: compiled artifacts and recorded failures, each list in one fsynced batch; a large
 * artifact's chunks go out before the batch that writes its record.
 */
public final class ArtifactWrites {
  private final Store store;

  ArtifactWrites(Store store) {
    this.store = store;
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
    artifacts.forEach(a -> store.memory.invalidate(a.key()));
  }

  private void storeArtifacts(List<NewArtifact> artifacts) {
    store.requireWritable();
    long now = store.clock.millis();
    List<ArtifactRecord> records = new ArrayList<>(artifacts.size());
    List<byte[]> logs = new ArrayList<>(artifacts.size());
    for (NewArtifact a : artifacts) {
      store.pinArtifact(a.key());
      byte[] log = a.info().log().getBytes(StandardCharsets.UTF_8);
      byte[] storedLog = stored(log);
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
      store.commit(true, txn -> {
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
    store.enforceMaxSize();
  }

  /**
   * Writes a large artifact's chunks. An entry under the key whose value is chunked too is removed
   * first: its readers would otherwise meet the new chunks under their old record (it is a miss
   * until the new record is written).
   */
  private StoredValues.ValueWriter chunkedArtifact(byte[] key, byte[] bytes) {
    StoredValues.ValueWriter w = store.values.writer(Cf.ARTIFACTS, key, bytes.length, true);
    try {
      ArtifactRecord old = store.readArtifactRecord(key);
      if (old != null && old.status() == EntryStatus.COMPILED && StoredValues.chunked(old.bytes())) {
        store.commit(false, txn -> txn.removeArtifact(key));
      }
      w.write(bytes);
      return w;
    } catch (RuntimeException e) {
      w.close();
      throw e;
    }
  }

  /**
   * Records several failed compiles (with the driver's classification, a one-line message and the
   * compiler's log; a failure never replaces a compiled artifact) in one atomic, fsynced batch: for
   * an import that meets many at once. Returns how many were recorded; a failure whose key holds a
   * compiled artifact is not. The graphs must already be stored.
   */
  public int recordFailures(List<NewFailure> failures) {
    store.requireWritable();
    long now = store.clock.millis();
    List<ArtifactRecord> records = new ArrayList<>(failures.size());
    List<byte[]> logs = new ArrayList<>(failures.size());
    for (NewFailure f : failures) {
      byte[] logBytes = f.log() == null ? new byte[0] : f.log().getBytes(StandardCharsets.UTF_8);
      byte[] storedLog = stored(logBytes);
      logs.add(storedLog);
      records.add(new ArtifactRecord(EntryStatus.FAILED, 0, null, 0, now, now, f.kind() == null ? "error" : f.kind(),
          f.message() == null ? "" : f.message(), logBytes.length, storedLog == null ? 0 : storedLog.length,
          storedLog == null ? null : Checksums.sha256(storedLog)));
      store.pinArtifact(f.key());
    }
    int recorded = store.commit(true, txn -> {
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
    store.enforceMaxSize();
    return recorded;
  }

  /** A compiler log as stored: zstd-compressed, or null when it is empty (no log value). */
  private static byte[] stored(byte[] log) {
    return log.length == 0 ? null : Zstd.compress(log, Store.ZSTD_LEVEL);
  }
}
