package dev.xlac.cache.ops;

import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.PruneRequest;
import dev.xlac.cache.PruneResult;
import dev.xlac.cache.store.Keys;
import dev.xlac.cache.store.Pins;
import dev.xlac.cache.store.Records;
import dev.xlac.cache.store.Records.GraphRecord;
import dev.xlac.cache.store.RocksDbStore;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.cache.store.Store;
import dev.xlac.cache.store.Totals;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.runtime.RequestKey;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Least-recently-used pruning. The access index lists every graph and artifact by last access,
 * oldest first, with its size, status and compiler, so choosing what to remove reads nothing else.
 * Removals are committed in batches (each one atomic, totals included); a prune that is killed
 * leaves a consistent cache with part of the removals done. A prune that removed anything (or finds
 * deleted data still on disk) then compacts with blob garbage collection forced, so the disk usage
 * really shrinks; on a disk without room for that, it compacts without rewriting blob files and says
 * what it could not reclaim yet ({@link RocksDbStore#compactAll}). A manual prune works on a full disk:
 * its deletes are small, and it first releases the disk reserve when the disk has no room left.
 *
 * <p>Callers hold the store's write lock from the plan to the last removal, so the totals the plan
 * starts from, the entries it walks and what its batches remove are one view: a graph planned as
 * pending cannot gain an artifact that its removal would then take along unplanned, and two
 * cleanups cannot both trim from the same starting size. Entries pinned by a running compile
 * ({@link Pins}) are never candidates.
 */
public final class PruneByLastAccess {
  private static final int BATCH = 1000;
  private final Store store;

  PruneByLastAccess(Store store) {
    this.store = store;
  }

  /** One removal: a graph or an artifact ({@code removed}), or a runtime entry ({@code request}). */
  private record Planned(byte kind, byte[] id, PruneResult.Removed removed, PruneResult.RemovedRequest request) {}

  /**
   * Removes entries as the request says; see {@link PruneRequest}. The prune holds the write lock
   * from its plan to its last removal, so it removes exactly what it planned: no other thread's
   * write (a graph gaining an artifact, another cleanup) can slip in between.
   */
  public static PruneResult run(Store store, PruneRequest request) {
    if (!request.dryRun()) {
      store.requireWritable();
    }
    try {
      return store.underWriteLock(() -> new PruneByLastAccess(store).prune(request));
    } finally {
      if (!request.dryRun()) {
        store.ensureReserve(); // released for a prune on a full disk: back when there is room
      }
    }
  }

  /** A prune under the write lock the caller holds. */
  static PruneResult pruneLocked(Store store, PruneRequest request) {
    return new PruneByLastAccess(store).prune(request);
  }

  private PruneResult prune(PruneRequest r) {
    Totals totals = store.totals();
    long before = totals.storedBytes();
    long diskBefore = r.automatic() ? -1 : store.diskUsage();
    long cutoff = r.olderThan() == null ? Long.MIN_VALUE : store.clock().millis() - r.olderThan().toMillis();
    List<Planned> plan = new ArrayList<>();
    Set<ByteBuffer> plannedArtifacts = new HashSet<>();
    Map<ByteBuffer, String> modules = new HashMap<>();
    long remaining = before;
    Pins pins = store.pins();
    try (Cursor c = store.accessIndex()) {
      for (; c.valid(); c.next()) {
        byte[] key = c.key();
        byte kind = Keys.accessKind(key);
        byte[] id = Keys.accessId(key);
        if (pins != null && pins.pinned(kind, id)) {
          continue; // in use by a running compile (an unpinned graph has no pinned artifact)
        }
        long lastAccess = Keys.accessTime(key);
        long size = Records.accessSize(c.value());
        EntryStatus status = Records.accessStatus(c.value());
        String compiler = null;
        if (kind == Keys.KIND_REQUEST) {
          // A runtime entry (schema version 4): a candidate like a graph, by its last access or hit.
          if (r.hasFilter()) {
            continue;
          }
          boolean old = lastAccess < cutoff;
          boolean over = r.maxSize().isPresent() && remaining > r.maxSize().getAsLong();
          if (r.hasBound() && !old && !over) {
            break;
          }
          Records.RequestRecord rr = store.readRequestRecord(id);
          remaining -= size;
          plan.add(new Planned(kind, id, null, new PruneResult.RemovedRequest(new RequestKey(id),
              rr == null ? "" : rr.platformName(), size, Instant.ofEpochMilli(lastAccess))));
          continue;
        }
        if (kind == Keys.KIND_ARTIFACT) {
          String digest = Keys.hex(Keys.compilerOf(id));
          CompilerIdentity identity = store.identity(digest);
          if ((r.failedOnly() && status != EntryStatus.FAILED)
              || (r.compiler() != null && !r.compiler().matches(digest, identity))
              || (r.notCompiler() != null && r.notCompiler().matches(digest, identity))) {
            continue;
          }
          if (plannedArtifacts.contains(ByteBuffer.wrap(id))) {
            continue;
          }
          compiler = identity == null ? digest.substring(0, 12) : identity.shortName();
        } else if (r.hasFilter()) {
          continue;
        }
        boolean old = lastAccess < cutoff;
        boolean over = r.maxSize().isPresent() && remaining > r.maxSize().getAsLong();
        if (r.hasBound() && !old && !over) {
          break; // later entries are newer and the size only shrinks: nothing after this qualifies
        }
        byte[] fp = kind == Keys.KIND_ARTIFACT ? Keys.graphOf(id) : id;
        String module = modules.computeIfAbsent(ByteBuffer.wrap(fp), k -> {
          GraphRecord g = store.readGraphRecord(fp);
          return g == null ? "" : g.moduleName();
        });
        if (kind == Keys.KIND_GRAPH) {
          size += unplannedArtifactBytes(fp, plannedArtifacts);
        } else {
          plannedArtifacts.add(ByteBuffer.wrap(id));
        }
        remaining -= size;
        plan.add(new Planned(kind, id, new PruneResult.Removed(
            Keys.fingerprint(fp), module, compiler, status, size,
            Instant.ofEpochMilli(lastAccess)), null));
      }
    }
    List<PruneResult.Removed> removed = plan.stream().map(Planned::removed).filter(java.util.Objects::nonNull).toList();
    List<PruneResult.RemovedRequest> requests = plan.stream().map(Planned::request)
        .filter(java.util.Objects::nonNull).toList();
    long planned = before - remaining;
    if (r.dryRun()) {
      return new PruneResult(removed, planned, before, remaining, diskBefore, -1, 0, 0, true, requests);
    }
    if (!r.automatic()) {
      store.makeRoom();
    }
    long freed = 0;
    for (int i = 0; i < plan.size(); i += BATCH) {
      List<Planned> chunk = plan.subList(i, Math.min(plan.size(), i + BATCH));
      boolean last = i + BATCH >= plan.size();
      freed += store.commit(false, txn -> {
        long f = 0;
        for (Planned p : chunk) {
          f += switch (p.kind()) {
            case Keys.KIND_GRAPH -> txn.removeGraph(p.id());
            case Keys.KIND_REQUEST -> txn.removeRequest(p.id());
            default -> txn.removeArtifact(p.id());
          };
        }
        if (last && r.automatic()) {
          txn.countCleanup();
        }
        return f;
      });
    }
    store.invalidateMemory();
    long diskAfter = -1;
    RocksDbStore.Compaction left = RocksDbStore.Compaction.COMPLETE;
    if (!plan.isEmpty()) {
      store.syncWal();
    }
    if (!r.automatic() && (!plan.isEmpty() || store.blobGarbageBytes() > 0)) {
      left = store.compactAll();
      diskAfter = store.diskUsage();
    }
    return new PruneResult(removed, freed, before, store.totals().storedBytes(), diskBefore,
        diskAfter < 0 ? diskBefore : diskAfter, left.garbageBytes(), left.neededBytes(), false, requests);
  }

  private long unplannedArtifactBytes(byte[] fp, Set<ByteBuffer> plannedArtifacts) {
    long bytes = 0;
    try (Cursor a = store.artifacts(fp)) {
      for (; a.valid() && Keys.startsWith(a.key(), fp); a.next()) {
        if (plannedArtifacts.add(ByteBuffer.wrap(a.key()))) {
          bytes += Records.decodeArtifact(a.value()).storedBytes();
        }
      }
    }
    return bytes;
  }
}
