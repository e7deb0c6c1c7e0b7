package dev.xlac.pipeline;

import dev.xlac.cache.CacheStore;

/** Opens the cache for writing when a run is ready for it (the CLI waits for another writer as {@code --wait} says). */
@FunctionalInterface
public interface CacheOpener {
  CacheStore open() throws InterruptedException;
}
