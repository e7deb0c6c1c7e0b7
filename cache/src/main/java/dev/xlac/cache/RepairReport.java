package dev.xlac.cache;

import java.nio.file.Path;
import java.util.List;

/**
 * What {@code cache verify --repair} ({@link CacheRepair#repair}) found, did and left.
 *
 * @param found what the check of the database found before anything was repaired, each problem with
 *     what the repair did about it; null when the database could not be opened
 * @param rebuildReason null when the cache was repaired in place; else why its database was rebuilt
 *     from what could be read (it could not be opened, or a table file has a damaged block)
 * @param salvage what the rebuild kept; null when there was none
 * @param lost every entry the repair had to give up, graph or artifact
 * @param brokenDatabase where the damaged database was moved (kept for the user to delete); null if none
 * @param brokenBytes its size on disk
 * @param emptyReason null, or why even the rebuild failed, so that the cache was started empty
 * @param after the check of the cache once repaired
 */
public record RepairReport(VerifyReport found, String rebuildReason, Salvage salvage, List<LostEntry> lost,
    Path brokenDatabase, long brokenBytes, String emptyReason, VerifyReport after) {

  public RepairReport {
    lost = List.copyOf(lost);
  }

  /**
   * What a rebuild kept.
   *
   * @param graphsRestored graphs whose record was lost, restored from their module (fingerprint recomputed)
   * @param artifactsRestored artifacts whose record was lost, restored from their bytes as compiled
   *     (compile time unknown)
   * @param valuesFromBlobFiles values that RocksDB could not read, read by xlac from the blob files
   *     (each checked against its record CRC and its SHA-256)
   * @param logsLost compile logs that could not be read (their entries were kept without them)
   * @param settingsKept whether the cache's settings (max-size, trust) could be read and were kept
   */
  public record Salvage(long graphsKept, long graphsRestored, long artifactsKept, long artifactsRestored,
      long valuesFromBlobFiles, long logsLost, boolean settingsKept) {}

  /**
   * One entry lost. {@code compiler} is null for a graph; {@code module} null when no record of it could be
   * read; {@code why} says what could not be read.
   */
  public record LostEntry(String fingerprint, String module, String compiler, String why) {
    /** A runtime entry lost: {@code fingerprint} is its request key ({@code pjrt1:...}), {@code module} its platform. */
    public static LostEntry request(String key, String platform, String why) {
      return new LostEntry(key, platform, null, why);
    }

    /**
     * {@code graph 1a2b3c4d5e6f (jit_step)}, {@code artifact 1a2b3c4d5e6f (jit_step) for pjrt:cpu} or
     * {@code runtime entry pjrt1:1a2b3c4d5e6f (cpu)}.
     */
    public String entry() {
      String m = module == null ? "" : " (" + module + ")";
      if (fingerprint != null && fingerprint.startsWith(dev.xlac.runtime.RequestKey.VERSION + ":")) {
        return "runtime entry " + fingerprint + m;
      }
      return compiler == null ? "graph " + fingerprint + m : "artifact " + fingerprint + m + " for " + compiler;
    }
  }

  /** Whether the cache verifies clean now. */
  public boolean clean() {
    return after != null && after.clean();
  }

  public boolean rebuilt() {
    return rebuildReason != null;
  }
}
