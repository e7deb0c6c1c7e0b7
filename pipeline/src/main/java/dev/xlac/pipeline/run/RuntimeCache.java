package dev.xlac.pipeline.run;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.layout.PjrtRuntimeLayout;
import dev.xlac.pipeline.recording.OrphanedSpools;
import dev.xlac.pipeline.recording.RealPlugin;
import dev.xlac.runtime.LayoutEntry;
import dev.xlac.runtime.RequestKey;
import dev.xlac.runtime.RunStatistics;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Where {@code xlac run}'s layout lives under the cache directory, and the cache calls a run makes:
 * {@code CACHE/runtime/pjrt} (the layout the proxy serves from, materialized incrementally) and its stamp. The
 * plugin memos ({@code CACHE/runtime/plugins}) are {@link RealPlugin}'s, the record spools
 * ({@code CACHE/runtime/spool}) {@link OrphanedSpools}'.
 */
final class RuntimeCache {
  private RuntimeCache() {}

  static Path layoutDir(Path cacheDir) {
    return PjrtRuntimeLayout.managedDir(cacheDir);
  }

  /**
   * {@code CACHE/runtime/pending-hits}: the hits of runs the fast start finished without a JVM, which the next open
   * of the cache for writing counts (cache/README.md).
   */
  static Path pendingHitsDir(Path cacheDir) {
    return CacheStore.pendingRuntimeHits(cacheDir);
  }

  /**
   * {@code CACHE/runtime/pjrt.stamp}: the plugin the layout was last brought up to date for, and the
   * cache's database files as they were then (after the cache was closed). While both still hold, the
   * layout is current, and {@code xlac run} does not open the cache before the command starts: its
   * start-up then costs no database work beside the training command's own.
   *
   * <p>The stamp is written only under the cache's writer lock, with the database closed, for the state the layout
   * was brought up to date from (or, at a run's end, carried over from a stamp that held when the lock was taken):
   * so it never names a state that another process's write made after the layout was written.
   */
  static Path stampFile(Path cacheDir) {
    return cacheDir.resolve("runtime").resolve("pjrt.stamp");
  }

  /**
   * The names, sizes and modification times of the files in {@code CACHE/db}, hashed; any write to
   * the cache (RocksDB writes new files on every open for writing) changes it. The info logs
   * ({@code LOG*}), which a read-only open may write, do not count. Null when it cannot be read.
   */
  static String databaseState(Path cacheDir) {
    try (var files = Files.list(cacheDir.resolve("db"))) {
      StringBuilder b = new StringBuilder();
      for (Path f : files.sorted().toList()) {
        String name = f.getFileName().toString();
        if (name.startsWith("LOG")) {
          continue;
        }
        var a = Files.readAttributes(f, java.nio.file.attribute.BasicFileAttributes.class,
            java.nio.file.LinkOption.NOFOLLOW_LINKS);
        b.append(name).append(' ').append(a.size()).append(' ')
            .append(a.lastModifiedTime().to(java.util.concurrent.TimeUnit.NANOSECONDS)).append('\n');
      }
      return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
          .digest(b.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    } catch (IOException | java.security.NoSuchAlgorithmException | RuntimeException e) {
      return null;
    }
  }

  /** The stamp that says the layout is current for {@code pluginSha256} and the database as it is now; null when
   * the database cannot be read. */
  static String currentStamp(Path cacheDir, String pluginSha256) {
    String state = databaseState(cacheDir);
    return state == null ? null : stamp(pluginSha256, state);
  }

  /** Whether the stamp says the layout is current for {@code pluginSha256}. */
  static boolean layoutCurrent(Path cacheDir, String pluginSha256) {
    String state = databaseState(cacheDir);
    try {
      return state != null && Files.readString(stampFile(cacheDir)).equals(stamp(pluginSha256, state));
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * Writes the stamp for the cache as it is now; removes it when that cannot be told. Only under the writer lock,
   * the database closed, and only when the layout holds what the database holds.
   */
  static void markCurrent(Path cacheDir, String pluginSha256) {
    String state = databaseState(cacheDir);
    if (state == null) {
      forget(cacheDir);
      return;
    }
    try {
      dev.xlac.core.io.AtomicFiles.writeString(stampFile(cacheDir), stamp(pluginSha256, state));
    } catch (IOException | RuntimeException e) {
      forget(cacheDir);
    }
  }

  /** The layout must be brought up to date by the next run. */
  static void forget(Path cacheDir) {
    try {
      Files.deleteIfExists(stampFile(cacheDir));
    } catch (IOException e) {
      // the stamp names the database state: a stale one cannot match a changed cache
    }
  }

  private static String stamp(String pluginSha256, String state) {
    return "xlac-pjrt-stamp 1\nplugin " + pluginSha256 + "\ndb " + state + "\n";
  }

  /** Brings the layout up to date with the cache (for one plugin, or all): written, kept, removed. */
  static int[] materialize(CacheStore store, Path layout, Optional<String> pluginSha256, Consumer<String> problems) {
    return materialize(store, layout, pluginSha256, false, problems);
  }

  static int[] materialize(CacheStore store, Path layout, Optional<String> pluginSha256, boolean verify,
      Consumer<String> problems) {
    var r = PjrtRuntimeLayout.materialize(store, layout, pluginSha256, verify, problems);
    return new int[] {r.written(), r.kept(), r.removed()};
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
