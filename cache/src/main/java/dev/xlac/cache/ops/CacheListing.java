package dev.xlac.cache.ops;

import dev.xlac.cache.CacheStatistics;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.ListQuery;
import dev.xlac.cache.ListRow;
import dev.xlac.cache.store.DiskReserve;
import dev.xlac.cache.store.Keys;
import dev.xlac.cache.store.PendingHits;
import dev.xlac.cache.store.Records;
import dev.xlac.cache.store.Records.ArtifactRecord;
import dev.xlac.cache.store.Records.GraphRecord;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.cache.store.Store;
import dev.xlac.cache.store.Totals;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.GraphFingerprint;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * Builds {@code cache ls} rows and {@code cache stat} figures with one ordered pass over the graph
 * and artifact records: artifact keys start with their graph's fingerprint, so the two families
 * are merged like sorted lists.
 */
public final class CacheListing {
  private final Store store;

  public CacheListing(Store store) {
    this.store = store;
  }

  public List<ListRow> list(ListQuery q) {
    List<ListRow> rows = new ArrayList<>();
    // One JNI call per key, value and step: the cursors are read once per record (this runs in a cold JVM).
    try (Cursor g = store.graphs(null); Cursor a = store.artifacts(null)) {
      byte[] ak = a.valid() ? a.key() : null;
      byte[] lastCid = null; // rows mostly share a compiler: decode its digest and identity once
      String digest = null;
      CompilerIdentity id = null;
      for (; g.valid(); g.next()) {
        byte[] fp = g.key();
        GraphRecord gr = Records.decodeGraph(g.value());
        GraphFingerprint f = Keys.fingerprint(fp);
        while (ak != null && Arrays.compareUnsigned(ak, 0, Keys.DIGEST, fp, 0, Keys.DIGEST) < 0) {
          a.next(); // an orphan (verify reports it)
          ak = a.valid() ? a.key() : null;
        }
        boolean any = false;
        for (; ak != null && Keys.startsWith(ak, fp); a.next(), ak = a.valid() ? a.key() : null) {
          any = true;
          ArtifactRecord ar = Records.decodeArtifact(a.value());
          if (lastCid == null || !Arrays.equals(ak, Keys.DIGEST, Keys.ARTIFACT, lastCid, 0, Keys.DIGEST)) {
            lastCid = Keys.compilerOf(ak);
            digest = Keys.hex(lastCid);
            id = store.identity(digest);
          }
          if ((q.status() != null && q.status() != ar.status())
              || (q.compiler() != null && !q.compiler().matches(digest, id))) {
            continue;
          }
          rows.add(new ListRow(f, gr.moduleName(), ar.status(), digest, id, ar.bytes(), gr.rawBytes(),
              Duration.ofMillis(ar.compileMillis()), Instant.ofEpochMilli(ar.created()),
              Instant.ofEpochMilli(ar.lastAccess())));
        }
        if (!any && q.compiler() == null && (q.status() == null || q.status() == EntryStatus.PENDING)) {
          rows.add(new ListRow(f, gr.moduleName(), EntryStatus.PENDING, null, null, 0, gr.rawBytes(), Duration.ZERO,
              Instant.ofEpochMilli(gr.firstSeen()), Instant.ofEpochMilli(gr.lastAccess())));
        }
      }
    }
    Comparator<ListRow> order = switch (q.sort()) {
      case FINGERPRINT -> null;
      case SIZE -> Comparator.comparingLong((ListRow r) -> r.artifactBytes() + r.hloBytes()).reversed();
      case AGE -> Comparator.comparing(ListRow::created);
      case ACCESS -> Comparator.comparing(ListRow::lastAccess);
    };
    if (order != null) {
      rows.sort(order); // stable: ties stay in fingerprint order
    }
    return rows;
  }

  public static CacheStatistics statistics(Store store) {
    Totals t = store.totals();
    DiskReserve.State reserve = store.reserveState();
    long pending = 0;
    try (Cursor g = store.graphs(null); Cursor a = store.artifacts(null)) {
      byte[] ak = a.valid() ? a.key() : null;
      for (; g.valid(); g.next()) {
        byte[] fp = g.key();
        while (ak != null && Arrays.compareUnsigned(ak, 0, Keys.DIGEST, fp, 0, Keys.DIGEST) < 0) {
          a.next();
          ak = a.valid() ? a.key() : null;
        }
        if (ak == null || !Keys.startsWith(ak, fp)) {
          pending++;
        }
      }
    }
    return new CacheStatistics(store.dir, store.schemaVersion(), t.graphs, pending, t.compiled, t.failed,
        t.graphRawBytes, t.graphStoredBytes, t.artifactBytes, t.storedBytes(), t.rawBytes(), store.diskUsage(),
        store.maxSize(), t.hits, t.misses, Duration.ofMillis(t.savedMillis), t.cleanups, t.damagedReads,
        Instant.ofEpochMilli(t.countersSince), reserve.bytes(), reserve.whyNone(), t.requests, t.requestStoredBytes,
        t.runtimeHits, Duration.ofMillis(t.runtimeSavedMillis), PendingHits.waiting(store));
  }
}
