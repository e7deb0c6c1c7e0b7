package dev.xlac.cache.repair;

import dev.xlac.cache.DamagedCacheException;
import dev.xlac.cache.DiskFullException;
import dev.xlac.cache.RepairReport;
import dev.xlac.cache.VerifyReport;
import dev.xlac.cache.store.CacheLock;
import dev.xlac.cache.store.DatabaseSwap;
import dev.xlac.cache.store.DiskReserve;
import dev.xlac.cache.store.RocksDbStore;
import dev.xlac.cache.store.Store;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.FileTrees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * {@code cache verify --repair} and {@code cache clear} for a cache whatever its state: they end
 * with a cache that opens and verifies clean.
 *
 * <ol>
 *   <li>A database that opens is checked and repaired in place ({@link CacheVerifier}): damaged values
 *       recovered from the blob files or their entries dropped, indexes rebuilt, tables compacted.
 *   <li>A database that does not open, or whose damage cannot be repaired in place (a table block
 *       that fails its checksum), is rebuilt from what can be read ({@link CacheSalvage}) into a fresh
 *       database, which replaces it ({@link DatabaseSwap}); the damaged one is kept beside it as
 *       {@code db.broken-TIME} for the user to delete.
 *   <li>If even that fails, the damaged database is moved aside all the same and the cache starts empty.
 * </ol>
 *
 * Everything runs under the cache's writer lock; a crash at any moment leaves the old database in
 * place or the new one swapped in.
 */
public final class DatabaseRepair {
  /**
   * Tests only (kill -9 at each step of a rebuild, or a failure injected): told {@code rebuilding}
   * before the rebuild starts, {@code rebuilt} once the fresh database is closed, {@code complete} once it is marked complete, {@code moved} between the swap's two renames.
   */
  static volatile Consumer<String> stepsForTests = step -> { };

  private DatabaseRepair() {}

  /** Repairs the cache at {@code dir}; see the class comment. {@code lockWait} as for {@link Store#open}. */
  public static RepairReport repair(Path dir, Duration lockWait, Consumer<String> notices) throws InterruptedException {
    return repair(dir, lockWait, notices, Clock.systemUTC());
  }

  public static RepairReport repair(Path dir, Duration lockWait, Consumer<String> notices, Clock clock)
      throws InterruptedException {
    Path abs = dir.toAbsolutePath().normalize();
    try (CacheLock lock = CacheLock.acquire(abs, lockWait, notices)) {
      DatabaseSwap.recover(abs, notices);
      VerifyReport found = null;
      List<RepairReport.LostEntry> lost = new ArrayList<>();
      String rebuild;
      VerifyReport after = null;
      boolean opens = false;
      try (Store store = Store.openLocked(abs, notices, clock)) {
        opens = true;
        store.db().makeRoom(); // on a full disk, the reserve goes first: a repair writes
        CacheVerifier.InPlace r = new CacheVerifier(store).repairInPlace();
        found = r.found();
        lost.addAll(r.lost());
        rebuild = r.rebuildReason();
        after = r.after();
      } catch (DamagedCacheException e) {
        rebuild = e.damage();
      }
      if (rebuild == null) {
        return new RepairReport(found, null, null, lost, null, 0, null, after);
      }
      notices.accept("cache " + abs + ": rebuilding its database from what can still be read (" + rebuild + ")");
      RepairReport.Salvage salvage = null;
      String emptyReason = null;
      DatabaseSwap.Swapped swapped;
      try {
        // The rebuild writes a copy of everything it keeps: the reserve's space is for that too
        // (the next writer's open makes the reserve again).
        new DiskReserve(abs).release();
        Path rebuildDir = DatabaseSwap.newRebuildDirectory(abs);
        try {
          stepsForTests.accept("rebuilding");
          CacheSalvage.Result r = rebuildInto(abs, rebuildDir, opens, true, clock, notices);
          salvage = r.salvage();
          lost.addAll(r.lost());
        } catch (DiskFullException e) {
          // Not the damage's fault: the damaged database stays as it is, for a repair with more room.
          FileTrees.deleteTree(rebuildDir);
          throw new XlacException(dev.xlac.core.ExitCode.ENVIRONMENT, "cache " + abs + ": disk full while rebuilding"
              + " its database from what can still be read; the damaged database is unchanged: free about "
              + dev.xlac.core.Sizes.human(Math.max(0, FileTrees.treeBytes(abs.resolve(RocksDbStore.DB_DIR))))
              + " (its size) on its file system and run 'xlac cache verify --repair' again", e);
        } catch (IOException | RuntimeException e) {
          emptyReason = XlacException.reason(e);
          FileTrees.deleteTree(rebuildDir);
          Files.createDirectories(rebuildDir); // no database in it: the swap moves the old one aside, and the next open starts empty
        }
        stepsForTests.accept("rebuilt");
        DatabaseSwap.markComplete(rebuildDir, true);
        stepsForTests.accept("complete");
        swapped = DatabaseSwap.swap(abs, rebuildDir, clock.instant(), stepsForTests);
      } catch (IOException e) {
        throw RocksDbStore.ioFailure(abs, "cannot put the rebuilt database in place", e);
      }
      return new RepairReport(found, rebuild, salvage, distinct(lost), swapped.kept(), swapped.keptBytes(), emptyReason,
          checkAfter(abs, notices, clock));
    }
  }

  /**
   * {@code cache clear} of a cache whose database cannot be opened: a fresh, empty database replaces
   * it, with the settings (max-size, trust) and usage counters that could still be read, and the
   * damaged one is deleted. Returns the bytes the damaged database occupied.
   */
  public static Cleared clearDamaged(Path dir, Duration lockWait, Consumer<String> notices) throws InterruptedException {
    Path abs = dir.toAbsolutePath().normalize();
    Clock clock = Clock.systemUTC();
    try (CacheLock lock = CacheLock.acquire(abs, lockWait, notices)) {
      DatabaseSwap.recover(abs, notices);
      long before = FileTrees.treeBytes(abs.resolve(RocksDbStore.DB_DIR));
      boolean settings = false;
      try {
        Path rebuildDir = DatabaseSwap.newRebuildDirectory(abs);
        try {
          // The settings (require-signed, trusted keys) are read from the database itself where a
          // read-only open still works, else from RocksDB's repair of a copy.
          settings = rebuildInto(abs, rebuildDir, true, false, clock, notices).salvage().settingsKept();
        } catch (IOException | RuntimeException e) {
          FileTrees.deleteTree(rebuildDir);
          Files.createDirectories(rebuildDir);
        }
        DatabaseSwap.markComplete(rebuildDir, false);
        DatabaseSwap.swap(abs, rebuildDir, clock.instant(), stepsForTests);
      } catch (IOException e) {
        throw RocksDbStore.ioFailure(abs, "cannot replace the damaged database", e);
      }
      return new Cleared(Math.max(0, before), settings);
    }
  }

  /** What {@link #clearDamaged} did: the bytes freed, and whether the settings could be kept. */
  public record Cleared(long bytesFreed, boolean settingsKept) {}

  private static CacheSalvage.Result rebuildInto(Path abs, Path rebuildDir, boolean originalOpens, boolean entries,
      Clock clock, Consumer<String> notices) throws IOException, InterruptedException {
    RocksDbStore original = null;
    if (originalOpens) {
      try {
        original = RocksDbStore.open(abs, false);
      } catch (RuntimeException e) {
        // then the repaired copy alone
      }
    }
    try {
      return CacheSalvage.rebuild(abs, original, rebuildDir, entries, clock, notices);
    } finally {
      if (original != null) {
        original.close();
      }
    }
  }

  private static VerifyReport checkAfter(Path abs, Consumer<String> notices, Clock clock) {
    try (Store store = Store.openLocked(abs, notices, clock)) {
      return CacheVerifier.run(store, false);
    } catch (DamagedCacheException e) {
      // Not "run verify --repair": that is what just ran.
      throw new XlacException(dev.xlac.core.ExitCode.WORK_FAILED, "cache " + abs + " is still damaged after its repair ("
          + e.damage() + "); its old database is kept beside it as db.broken-TIME where one was made", e);
    }
  }

  private static List<RepairReport.LostEntry> distinct(List<RepairReport.LostEntry> lost) {
    Map<String, RepairReport.LostEntry> byEntry = new LinkedHashMap<>();
    for (RepairReport.LostEntry l : lost) {
      byEntry.putIfAbsent(l.entry(), l);
    }
    return List.copyOf(byEntry.values());
  }
}
