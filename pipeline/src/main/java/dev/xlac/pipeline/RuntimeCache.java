package dev.xlac.pipeline;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestIngest;
import dev.xlac.cache.layout.PjrtRecordSpool;
import dev.xlac.cache.layout.PjrtRuntimeLayout;
import dev.xlac.runtime.LayoutEntry;
import dev.xlac.runtime.RequestKey;
import dev.xlac.runtime.RunStatistics;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Where a run's runtime files live under the cache directory, and the cache calls a run makes:
 * {@code CACHE/runtime/pjrt} (the layout the proxy serves from, materialized incrementally),
 * {@code CACHE/runtime/plugins} (the plugin memos of {@link RealPlugin}) and
 * {@code CACHE/runtime/spool} (record spools of runs in progress, on the cache's file system, since
 * they hold whole executables).
 */
final class RuntimeCache {
  private RuntimeCache() {}

  static Path layoutDir(Path cacheDir) {
    return cacheDir.resolve("runtime").resolve("pjrt");
  }

  static Path memoDir(Path cacheDir) {
    return cacheDir.resolve("runtime").resolve("plugins");
  }

  static Path spoolRoot(Path cacheDir) {
    return cacheDir.resolve("runtime").resolve("spool");
  }

  /** Brings the layout up to date with the cache (for one plugin, or all): written, kept, removed. */
  static int[] materialize(CacheStore store, Path layout, Optional<String> pluginSha256, Consumer<String> problems) {
    var r = PjrtRuntimeLayout.materialize(store, layout, pluginSha256, problems);
    return new int[] {r.written(), r.kept(), r.removed()};
  }

  static RequestIngest ingest(Path spool, CacheStore store, Consumer<String> problems) {
    return PjrtRecordSpool.ingest(spool, store, problems);
  }

  static void recordHits(CacheStore store, RunStatistics stats) {
    if (stats.hits() > 0) {
      store.recordRequestHits(stats.hitsByKey(), stats.savedTime());
    }
  }

  /** Deletes the layout entries the proxy could not serve, so the next materialize writes them again. */
  static int deleteDamaged(Path layout, RunStatistics stats) {
    int n = 0;
    for (RequestKey key : stats.damagedKeys()) {
      try {
        if (Files.deleteIfExists(LayoutEntry.path(layout, key))) {
          n++;
        }
      } catch (IOException e) {
        // the next run falls back again and tries again
      }
    }
    return n;
  }
}
