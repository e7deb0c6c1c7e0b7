package dev.xlac.cache;

import dev.xlac.hlo.GraphFingerprint;
import java.time.Instant;
import java.util.List;

/**
 * What a prune removed (or, dry, would remove).
 *
 * @param bytesBefore stored bytes before; {@code bytesAfter} after (dry: as it would be)
 * @param diskBefore database bytes on disk before; {@code diskAfter} after compaction (dry: -1)
 * @param diskUnreclaimed bytes of removed data still on disk after the compaction: they share blob files
 *     with entries that stay, and the disk had no room to rewrite those ({@code roomNeeded} free bytes)
 */
public record PruneResult(List<Removed> removed, long bytesFreed, long bytesBefore, long bytesAfter, long diskBefore,
    long diskAfter, long diskUnreclaimed, long roomNeeded, boolean dryRun, List<RemovedRequest> requestsRemoved) {

  public PruneResult {
    removed = List.copyOf(removed);
    requestsRemoved = requestsRemoved == null ? List.of() : List.copyOf(requestsRemoved);
  }

  /** A prune that removed no runtime entries (what caches of schema version 3 and earlier hold). */
  public PruneResult(List<Removed> removed, long bytesFreed, long bytesBefore, long bytesAfter, long diskBefore,
      long diskAfter, long diskUnreclaimed, long roomNeeded, boolean dryRun) {
    this(removed, bytesFreed, bytesBefore, bytesAfter, diskBefore, diskAfter, diskUnreclaimed, roomNeeded, dryRun,
        List.of());
  }

  /**
   * One removed runtime entry: a recorded PJRT compile request and its executable.
   *
   * @param bytes what it occupied (compressed request and executable)
   */
  public record RemovedRequest(dev.xlac.runtime.RequestKey key, String platformName, long bytes, Instant lastAccess) {}

  /**
   * One removed entry: a graph (with any artifacts it still had) or one artifact.
   *
   * @param compiler the compiler's short name; null for a graph
   */
  public record Removed(GraphFingerprint fingerprint, String module, String compiler, EntryStatus status, long bytes,
      Instant lastAccess) {

    public boolean isGraph() {
      return compiler == null;
    }
  }

  public long graphsRemoved() {
    return removed.stream().filter(Removed::isGraph).count();
  }

  public long artifactsRemoved() {
    return removed.size() - graphsRemoved();
  }
}
