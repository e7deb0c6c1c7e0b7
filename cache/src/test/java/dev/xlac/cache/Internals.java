package dev.xlac.cache;

import java.util.function.Consumer;

/** Test-only access to a {@link CacheStore}'s internals, for tests in other packages and for hooks. */
public final class Internals {
  private Internals() {}

  /** Runs {@code hook} before every artifact load from the database (not for artifacts kept in memory). */
  public static void beforeLoad(CacheStore s, Consumer<ArtifactKey> hook) {
    s.beforeLoad = hook;
  }
}
