package dev.xlac.pipeline.run;

import dev.xlac.cache.CacheStore;

/**
 * Takes the cache's writer lock when a run is ready for it (the CLI waits for another writer as {@code --wait}
 * says): a run looks at the database's files under the lock before it opens the database and after it closes it.
 */
@FunctionalInterface
public interface CacheLocker {
  CacheStore.WriterLock lock() throws InterruptedException;
}
