package dev.xlac.cache.ops;

import dev.xlac.cache.PruneRequest;
import dev.xlac.cache.store.Pins;
import dev.xlac.cache.store.Store;
import dev.xlac.core.Sizes;
import java.util.OptionalLong;

/**
 * The automatic size limit ({@code cache config max-size}): after a write that leaves the cache over
 * it, trims the cache to {@link Store#CLEANUP_TARGET} of it, least recently used first, leaving what
 * a running compile pinned ({@link Pins}). When the pinned entries alone are over the limit, the
 * cache stays over it and says so once per run. Installed as the store's {@link Store#onOverLimit}
 * hook, so the store needs nothing of ops.
 */
public final class SizeLimit {
  private SizeLimit() {}

  /** Trims {@code store} when it is over its max-size; nothing otherwise. */
  public static void enforce(Store store) {
    OptionalLong max = store.maxSize();
    if (!store.writable() || max.isEmpty() || store.storedBytes() <= max.getAsLong()) {
      return;
    }
    long limit = max.getAsLong();
    long target = (long) (limit * Store.CLEANUP_TARGET);
    store.underWriteLock(() -> { // the check, the prune and what it leaves are one step for concurrent writers
      if (store.storedBytes() <= limit) {
        return null; // another thread's cleanup came first
      }
      Pins pins = store.pins();
      if (pins == null || !pins.onlyPinnedLeft()) {
        PruneByLastAccess.pruneLocked(store, PruneRequest.automatic(target));
      }
      long left = store.storedBytes();
      if (pins != null && left > target) {
        pins.onlyPinnedLeft(true); // the prune removed every unpinned entry and still was over
      }
      if (pins != null && left > limit && pins.firstTimeOverLimit()) {
        store.notice("cache " + store.directory() + " holds " + Sizes.human(left) + ", over its max-size of "
            + Sizes.human(limit) + ", all of it in use by this run: it stays over the limit until the run ends, when"
            + " the least recently used entries are removed (raise the limit with 'xlac cache config max-size SIZE')");
      }
      return null;
    });
  }
}
