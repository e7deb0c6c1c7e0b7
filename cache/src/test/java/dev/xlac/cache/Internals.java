package dev.xlac.cache;

import dev.xlac.cache.store.Store;
import dev.xlac.cache.store.StoreInternals;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * Test-only doors into a {@link CacheStore}, for tests in any package of the cache: its engine
 * ({@link Store}), an open with a chosen clock, and hooks. Production code has no such door.
 */
public final class Internals {
  private Internals() {}

  /** The engine under the facade. */
  public static Store store(CacheStore s) {
    return s.store();
  }

  /** Opens the cache at {@code dir} for writing, with {@code clock} for every time it records. */
  public static CacheStore open(Path dir, Consumer<String> notices, Clock clock) throws InterruptedException {
    return CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, notices, clock);
  }

  /** Runs {@code hook} before every artifact load from the database (not for artifacts kept in memory). */
  public static void beforeLoad(CacheStore s, Consumer<ArtifactKey> hook) {
    StoreInternals.beforeLoad(s.store(), hook);
  }
}
