package dev.xlac.cache;

import dev.xlac.cache.repair.DatabaseRepair;
import dev.xlac.cache.store.CacheModes;
import dev.xlac.core.XlacException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;

/**
 * {@code cache verify --repair} and {@code cache clear} for a cache whatever its state: they end
 * with a cache that opens and verifies clean. A database that opens is repaired in place; one that
 * does not, or whose damage cannot be repaired in place, is rebuilt from what can be read into a
 * fresh database that replaces it, the damaged one kept beside it as {@code db.broken-TIME}; if even
 * that fails, the cache starts empty. Everything runs under the cache's writer lock; a crash at any
 * moment leaves the old database in place or the new one swapped in. The work is the store's
 * ({@code repair.DatabaseRepair}), which uses the store's engine.
 */
public final class CacheRepair {
  private CacheRepair() {}

  /** Repairs the cache at {@code dir}. {@code lockWait} as for {@link CacheStore#open}. */
  public static RepairReport repair(Path dir, Duration lockWait, Consumer<String> notices) throws InterruptedException {
    return repair(dir, lockWait, notices, Clock.systemUTC());
  }

  static RepairReport repair(Path dir, Duration lockWait, Consumer<String> notices, Clock clock)
      throws InterruptedException {
    RepairReport r = DatabaseRepair.repair(dir, lockWait, notices, clock);
    // After the database's repair: a rebuild makes new directories (private ones). Before the layout loses what
    // the cache does not hold, so that every mode found is reported.
    List<VerifyReport.Problem> modes = CacheModes.repair(dir);
    removeFromLayout(dir, lockWait, notices);
    if (modes.isEmpty()) {
      return r;
    }
    VerifyReport found = r.found() != null ? r.found() : new VerifyReport(0, 0, 0, List.of(), true);
    List<VerifyReport.Problem> left = modes.stream().filter(p -> p.action() == null).toList();
    return new RepairReport(found.plus(modes), r.rebuildReason(), r.salvage(), r.lost(), r.brokenDatabase(),
        r.brokenBytes(), r.emptyReason(), r.after() == null ? null : r.after().plus(left));
  }

  /**
   * {@code cache clear} of a cache whose database cannot be opened: a fresh, empty database replaces
   * it, with the settings (max-size, trust) and usage counters that could still be read, and the
   * damaged one is deleted.
   */
  public static Cleared clearDamaged(Path dir, Duration lockWait, Consumer<String> notices) throws InterruptedException {
    DatabaseRepair.Cleared c = DatabaseRepair.clearDamaged(dir, lockWait, notices);
    removeFromLayout(dir, lockWait, notices);
    return new Cleared(c.bytesFreed(), c.settingsKept());
  }

  /** What the repair dropped, removed from the cache's own runtime layout too (as {@link CacheStore#close} does). */
  private static void removeFromLayout(Path dir, Duration lockWait, Consumer<String> notices)
      throws InterruptedException {
    try (CacheStore.WriterLock lock = CacheStore.lock(dir, lockWait, notices); CacheStore store = lock.open()) {
      store.removeUnheldFromRuntimeLayout(notices);
    } catch (RuntimeException e) {
      notices.accept("cannot remove the dropped entries from the runtime layout: " + XlacException.reason(e));
    }
  }

  /** What {@link #clearDamaged} did: the bytes freed, and whether the settings could be kept. */
  public record Cleared(long bytesFreed, boolean settingsKept) {}
}
