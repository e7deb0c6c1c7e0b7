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
    long diskAfter, long diskUnreclaimed, long roomNeeded, boolean dryRun) {

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
