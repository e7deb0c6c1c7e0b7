package dev.xlac.cache.layout;

import dev.xlac.core.XlacException;
import dev.xlac.core.io.SiblingTemporaries;
import dev.xlac.runtime.LayoutEntry;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The entry files of a runtime layout directory, apart from the cache: where the cache's own layout lies, and the
 * removal of entry files whose key the cache no longer holds. {@code CacheStore} uses it after a clear, a prune or
 * a repair; {@link PjrtRuntimeLayout}, which reads the cache, builds on it.
 */
public final class LayoutEntryFiles {
  private static final Pattern ENTRY = Pattern.compile("([0-9a-f]{64})\\" + LayoutEntry.SUFFIX);
  private static final Pattern TEMPORARY = Pattern.compile("\\.[0-9a-f]{64}\\" + LayoutEntry.SUFFIX
      + "\\.tmp-([0-9]{1,18})(\\.[0-9]{1,18})?");

  private LayoutEntryFiles() {}

  /** {@code CACHE/runtime/pjrt}: the cache's own layout, which {@code xlac run} serves from. */
  public static Path managedDir(Path cacheDir) {
    return cacheDir.resolve("runtime").resolve("pjrt");
  }

  /**
   * Removes from {@code dir} the entry files of keys not in {@code held} (hex; asked for only when {@code dir} has
   * entries), writing nothing; the number removed. A proxy serving from {@code dir} right now misses them from then
   * on. Entry files that could not be removed (or a directory that could not be read) are reported to
   * {@code problems}: then the layout still serves what the cache no longer holds, and must not be taken as current.
   */
  public static int removeUnheld(Path dir, Supplier<Set<String>> held, Consumer<String> problems) {
    if (!Files.isDirectory(dir.resolve(LayoutEntry.DIRECTORY), LinkOption.NOFOLLOW_LINKS)) {
      return 0;
    }
    return removeOthers(dir, held.get(), problems).removed();
  }

  /** What the clean-up did: entry files removed, and the keys (hex) of the entry files left in place. */
  record Removal(int removed, Set<String> present) {}

  /** Removes entry files whose key the cache does not hold, and temporaries whose writer is gone. */
  static Removal removeOthers(Path dir, Set<String> cached, Consumer<String> problems) {
    Path entries = dir.resolve(LayoutEntry.DIRECTORY);
    Set<String> present = new HashSet<>();
    if (!Files.isDirectory(entries, LinkOption.NOFOLLOW_LINKS)) {
      return new Removal(0, present);
    }
    int removed = 0;
    int failed = 0;
    IOException firstFailure = null;
    try (DirectoryStream<Path> shards = Files.newDirectoryStream(entries)) {
      for (Path shard : shards) {
        if (!Files.isDirectory(shard, LinkOption.NOFOLLOW_LINKS)) {
          continue;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(shard)) {
          for (Path f : files) {
            String name = f.getFileName().toString();
            Matcher m = ENTRY.matcher(name);
            if (m.matches()) {
              if (!cached.contains(m.group(1)) || !shard.getFileName().toString().equals(m.group(1).substring(0, 2))) {
                try {
                  if (Files.deleteIfExists(f)) {
                    removed++;
                  }
                } catch (IOException e) {
                  failed++;
                  firstFailure = firstFailure == null ? e : firstFailure;
                }
              } else {
                present.add(m.group(1));
              }
              continue;
            }
            Matcher t = TEMPORARY.matcher(name);
            if (t.matches() && SiblingTemporaries.isStale(Long.parseLong(t.group(1)))) {
              removeQuietly(f);
            }
          }
        }
      }
    } catch (IOException e) {
      problems.accept("cannot clean up runtime layout " + dir + ": " + XlacException.reason(e));
    }
    if (failed > 0) {
      problems.accept("cannot remove " + failed + " entr" + (failed == 1 ? "y" : "ies") + " the cache no longer holds"
          + " from runtime layout " + dir + " (" + XlacException.reason(firstFailure) + ")");
    }
    return new Removal(removed, present);
  }

  static boolean removeQuietly(Path f) {
    try {
      return Files.deleteIfExists(f);
    } catch (IOException e) {
      return false;
    }
  }
}
