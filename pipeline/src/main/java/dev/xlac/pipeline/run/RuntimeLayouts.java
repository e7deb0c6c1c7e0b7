package dev.xlac.pipeline.run;

import dev.xlac.cache.CacheStore;
import dev.xlac.pipeline.recording.RealPlugin;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * {@code xlac cache materialize --layout pjrt DIR [--plugin PATH]}: the cache's runtime requests
 * written where {@code xlac run --layout DIR} (or the proxy, given {@code XLAC_PJRT_LAYOUT=DIR})
 * serves them from. With a plugin, only its executables: the plugin is identified as {@code xlac run}
 * does ({@link RealPlugin}, checked and hashed unless its memo is current).
 */
public final class RuntimeLayouts {
  private RuntimeLayouts() {}

  /** @param problems counted in the result */
  public record Materialized(int written, int kept, int removed, int problems) {}

  /**
   * @param verify read every kept entry whole and check its executable's SHA-256 (default: its header
   *     only; the proxy checks the SHA-256 before it serves an entry, and falls back when it fails)
   */
  public static Materialized materialize(CacheStore store, Path dir, Path plugin, Path cacheDir, boolean verify,
      Consumer<String> notices) {
    Optional<String> sha = plugin == null ? Optional.empty()
        : Optional.of(RealPlugin.identify(plugin, RealPlugin.memoDir(cacheDir), null).sha256());
    int[] problems = {0};
    int[] r = RuntimeCache.materialize(store, dir, sha, verify, m -> {
      problems[0]++;
      notices.accept(m);
    });
    return new Materialized(r[0], r[1], r[2], problems[0]);
  }
}
