package dev.xlac.cache.layout;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestInfo;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.SiblingTemporaries;
import dev.xlac.runtime.LayoutEntry;
import dev.xlac.runtime.LayoutManifest;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Writes the runtime layout the PJRT proxy serves from (runtime/README.md "The runtime layout"): one entry file
 * per stored request, {@code DIR/entries/<hh>/<hex>.xpx}, and the manifest {@code DIR/xlac-pjrt-layout}, written
 * last. Incremental: an entry file that already holds the right bytes (header and executable, checked against the
 * SHA-256) is kept; a missing, damaged or outdated one is written again; entry files of keys the cache no longer
 * holds (or of other plugins, when one is chosen) are removed, with the temporaries of writers that died.
 *
 * <p>Each entry is written through a unique temporary, fsynced and renamed into place, streaming the executable
 * from the cache and checking it as it passes ({@link LayoutEntry#write}): an executable that is damaged in the cache
 * is reported and never reaches an entry's name (an old file there is removed). A write that fails (a full disk)
 * stops the materialize with one line, leaving no partial file under an entry's name and the manifest as it was.
 */
public final class PjrtRuntimeLayout {
  private static final Pattern ENTRY = Pattern.compile("([0-9a-f]{64})\\" + LayoutEntry.SUFFIX);
  private static final Pattern TEMPORARY = Pattern.compile("\\.[0-9a-f]{64}\\" + LayoutEntry.SUFFIX
      + "\\.tmp-([0-9]{1,18})(\\.[0-9]{1,18})?");

  private PjrtRuntimeLayout() {}

  /**
   * What a materialize did.
   *
   * @param written entry files created or replaced
   * @param kept entry files already right (not rewritten)
   * @param removed entry files of keys not in the cache (or of other plugins) removed
   * @param damaged requests whose executable is damaged in the cache: not written, each reported
   */
  public record MaterializeResult(int written, int kept, int removed, int damaged) {}

  /**
   * Materializes every stored request into {@code dir}, or only those compiled with the plugin file whose SHA-256
   * is {@code pluginSha256}.
   */
  public static MaterializeResult materialize(CacheStore store, Path dir, Optional<String> pluginSha256,
      Consumer<String> problems) {
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw XlacException.environment("cannot create runtime layout " + dir + ": " + XlacException.reason(e));
    }
    Map<String, RequestInfo> wanted = new HashMap<>();
    for (RequestInfo r : store.requests()) {
      if (pluginSha256.isEmpty() || pluginSha256.get().equalsIgnoreCase(r.pluginSha256())) {
        wanted.put(r.key().hex(), r);
      }
    }
    int written = 0;
    int kept = 0;
    int damaged = 0;
    Set<String> plugins = new TreeSet<>();
    List<RequestKey> used = new ArrayList<>();
    for (RequestInfo r : wanted.values().stream().sorted((a, b) -> a.key().hex().compareTo(b.key().hex())).toList()) {
      RequestKey key = r.key();
      byte[] sha = HexFormat.of().parseHex(r.executableSha256());
      Path file = LayoutEntry.path(dir, key);
      if (LayoutEntry.matches(file, key, sha, r.executableBytes())) {
        kept++;
      } else {
        boolean[] readOk = {true};
        try {
          LayoutEntry.write(dir, key, sha, r.executableBytes(), r.compileTime().toNanos(), out -> {
            if (!store.readExecutable(key, out)) {
              readOk[0] = false;
              throw new DamagedInCache();
            }
          });
          written++;
        } catch (DamagedInCache e) {
          damaged++;
          removeQuietly(file);
          problems.accept("runtime entry " + key.text() + " (" + r.platformName() + ") is damaged in the cache;"
              + " not written (run 'xlac cache verify --repair')");
          continue;
        } catch (IOException e) {
          if (!readOk[0] || e.getMessage() != null && e.getMessage().contains("does not match its SHA-256")) {
            damaged++;
            removeQuietly(file);
            problems.accept("runtime entry " + key.text() + " is damaged in the cache (" + e.getMessage()
                + "); not written");
            continue;
          }
          throw XlacException.environment("cannot write runtime layout " + dir + ": entry " + key.text() + ": "
              + XlacException.reason(e) + "; the layout is unchanged but for the entries already written");
        }
      }
      used.add(key);
      if (!r.pluginSha256().isEmpty()) {
        plugins.add(r.pluginSha256().toLowerCase(java.util.Locale.ROOT));
      }
    }
    int removed = removeOthers(dir, wanted.keySet(), problems);
    try {
      LayoutManifest.write(dir, plugins);
    } catch (IOException e) {
      throw XlacException.environment("cannot write runtime layout " + dir + ": its manifest: "
          + XlacException.reason(e));
    }
    store.touchRequests(used);
    return new MaterializeResult(written, kept, removed, damaged);
  }

  /** The executable failed its check while it streamed out of the cache. */
  private static final class DamagedInCache extends IOException {
    private static final long serialVersionUID = 1L;

    DamagedInCache() {
      super("damaged in the cache", null);
    }
  }

  /** Removes entry files whose key is not wanted, and temporaries whose writer is gone; returns the entries removed. */
  private static int removeOthers(Path dir, Set<String> wanted, Consumer<String> problems) {
    Path entries = dir.resolve(LayoutEntry.DIRECTORY);
    if (!Files.isDirectory(entries, LinkOption.NOFOLLOW_LINKS)) {
      return 0;
    }
    int removed = 0;
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
              if (!wanted.contains(m.group(1)) || !shard.getFileName().toString().equals(m.group(1).substring(0, 2))) {
                if (removeQuietly(f)) {
                  removed++;
                }
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
    return removed;
  }

  private static boolean removeQuietly(Path f) {
    try {
      return Files.deleteIfExists(f);
    } catch (IOException e) {
      return false;
    }
  }
}
