package dev.xlac.cache;

import dev.xlac.core.XlacException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Supplier;

/** Whether a run uses the cache's remote tier ({@code --no-remote}, the default, {@code --require-remote}). */
public enum RemotePolicy {
  /** Not at all, whatever the cache's setting. */
  OFF,
  /** When the cache has one; a failure is one warning and the run goes on with its local cache. */
  USE,
  /** The cache must have one, and a failure is fatal (exit code 3): {@code --require-remote}. */
  REQUIRE;

  /**
   * The remote tier a run on the cache in {@code cacheDir} uses: none when OFF, else the cache's ({@code configured}
   * is asked only then); without one, REQUIRE is bad input (exit code 2).
   */
  public Optional<RemoteSetting> choose(Path cacheDir, Supplier<Optional<RemoteSetting>> configured) {
    if (this == OFF) {
      return Optional.empty();
    }
    Optional<RemoteSetting> setting = configured.get();
    if (setting.isEmpty() && this == REQUIRE) {
      throw XlacException.badInput("--require-remote: cache " + cacheDir + " has no remote tier (set one with 'xlac"
          + " cache config remote s3://BUCKET/PREFIX')");
    }
    return setting;
  }
}
