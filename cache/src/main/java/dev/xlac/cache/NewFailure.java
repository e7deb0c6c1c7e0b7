package dev.xlac.cache;

import java.util.Objects;

/**
 * A failed compile to record: see {@link CacheStore#recordFailures}.
 *
 * @param key the graph and compiler that failed
 * @param kind the driver's classification of the failure (null: {@code error})
 * @param message one line for the user (null: empty)
 * @param log the compiler's log (null: none)
 */
public record NewFailure(ArtifactKey key, String kind, String message, String log) {
  public NewFailure {
    Objects.requireNonNull(key, "key");
  }
}
