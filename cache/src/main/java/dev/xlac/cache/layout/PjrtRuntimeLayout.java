package dev.xlac.cache.layout;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestInfo;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.PrivateFiles;
import dev.xlac.runtime.LayoutEntry;
import dev.xlac.runtime.LayoutManifest;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * Writes the runtime layout the PJRT proxy serves from (runtime/README.md "The runtime layout"): one entry file
 * per stored request, {@code DIR/entries/<hh>/<hex>.xpx}, and the manifest {@code DIR/xlac-pjrt-layout}, written
 * last. Incremental: an entry file whose size and header are already right ({@link LayoutEntry#headerMatches}; with
 * {@code verify}, its executable's SHA-256 too, {@link LayoutEntry#matches}) is kept; a missing, damaged or outdated
 * one is written again. Without {@code verify} a damaged executable in a kept file is left to the proxy, which checks
 * the SHA-256 before it serves and falls back to compiling; {@code xlac run} removes the entries the proxy reports
 * damaged, so the next materialize writes them again. Entry files of keys the cache no longer holds are removed, with
 * the temporaries of writers that died.
 *
 * <p>With a plugin chosen, only that plugin's entries are written; other plugins' entries of keys the cache holds
 * stay (two plugins may share one layout), and the manifest names every plugin whose entries the directory holds.
 *
 * <p>Each entry is written through a unique temporary, fsynced and renamed into place, streaming the executable
 * from the cache and checking it as it passes ({@link LayoutEntry#write}): an executable that is damaged in the cache
 * is reported and never reaches an entry's name (an old file there is removed). A write that fails (a full disk)
 * stops the materialize with one line, leaving no partial file under an entry's name and the manifest as it was.
 *
 * <p>Materializing does not count as a use of an entry (its last access stays): what the runtime served, reported by
 * {@code xlac run} through {@link CacheStore#recordRequestHits}, is what keeps an entry from the LRU prune.
 */
public final class PjrtRuntimeLayout {
  private static final Pattern PLUGIN_SHA = Pattern.compile("[0-9a-f]{64}");

  private PjrtRuntimeLayout() {}

  /** {@code CACHE/runtime/pjrt}: the cache's own layout, which {@code xlac run} serves from. */
  public static Path managedDir(Path cacheDir) {
    return LayoutEntryFiles.managedDir(cacheDir);
  }

  /**
   * What a materialize did.
   *
   * @param written entry files created or replaced
   * @param kept entry files already right (not rewritten)
   * @param removed entry files of keys not in the cache removed
   * @param damaged requests whose executable is damaged in the cache: not written, each reported
   * @param skipped requests not written for another reason, each reported: a plugin SHA-256 that is not one, or an
   *     entry removed from the cache (a prune) while the layout was written
   */
  public record MaterializeResult(int written, int kept, int removed, int damaged, int skipped) {
    public MaterializeResult(int written, int kept, int removed, int damaged) {
      this(written, kept, removed, damaged, 0);
    }
  }

  /**
   * Materializes every stored request into {@code dir}, or only those compiled with the plugin file whose SHA-256
   * is {@code pluginSha256}, trusting a kept entry's size and header (see the class comment).
   */
  public static MaterializeResult materialize(CacheStore store, Path dir, Optional<String> pluginSha256,
      Consumer<String> problems) {
    return materialize(store, dir, pluginSha256, false, problems);
  }

  /**
   * As {@link #materialize(CacheStore, Path, Optional, Consumer)}; with {@code verify}, every kept entry file is read
   * whole and its executable checked against the SHA-256 (a damaged one is written again).
   */
  public static MaterializeResult materialize(CacheStore store, Path dir, Optional<String> pluginSha256,
      boolean verify, Consumer<String> problems) {
    try {
      PrivateFiles.createDirectories(dir);
    } catch (IOException e) {
      throw XlacException.environment("cannot create runtime layout " + dir + ": " + XlacException.reason(e));
    }
    Optional<String> filter = pluginSha256.map(p -> p.toLowerCase(Locale.ROOT));
    // every key the cache holds (of whichever plugin) may keep its entry file; its plugin names it in the manifest
    Map<String, String> pluginOf = new HashMap<>();
    int written = 0;
    int kept = 0;
    int damaged = 0;
    int skipped = 0;
    for (RequestInfo r : store.requests()) {
      RequestKey key = r.key();
      String plugin = r.pluginSha256().toLowerCase(Locale.ROOT);
      if (!plugin.isEmpty() && !PLUGIN_SHA.matcher(plugin).matches()) {
        skipped++;
        problems.accept("runtime entry " + key.text() + ": its plugin SHA-256 (\"" + clip(r.pluginSha256())
            + "\") is not 64 hex digits; not written");
        continue;
      }
      pluginOf.put(key.hex(), plugin);
      if (filter.isPresent() && !filter.get().equals(plugin)) {
        continue;
      }
      byte[] sha = HexFormat.of().parseHex(r.executableSha256());
      Path file = LayoutEntry.path(dir, key);
      boolean right = verify ? LayoutEntry.matches(file, key, sha, r.executableBytes())
          : LayoutEntry.headerMatches(file, key, sha, r.executableBytes());
      if (right) {
        kept++;
        continue;
      }
      try {
        LayoutEntry.write(dir, key, sha, r.executableBytes(), r.compileTime().toNanos(), out -> {
          if (!store.readExecutable(key, out)) {
            throw new NotReadable();
          }
        });
        written++;
      } catch (NotReadable | LayoutEntry.ExecutableMismatchException e) {
        LayoutEntryFiles.removeQuietly(file);
        if (e instanceof NotReadable && store.requestInfo(key).isEmpty()) {
          skipped++;
          pluginOf.remove(key.hex());
          problems.accept("runtime entry " + key.text() + " was removed from the cache while the layout was"
              + " written; not written");
          continue;
        }
        damaged++;
        problems.accept("runtime entry " + key.text() + " (" + r.platformName() + ") is damaged in the cache"
            + (e instanceof NotReadable ? "" : " (" + e.getMessage() + ")")
            + "; not written (run 'xlac cache verify --repair')");
      } catch (IOException e) {
        throw XlacException.environment("cannot write runtime layout " + dir + ": entry " + key.text() + ": "
            + XlacException.reason(e) + "; the layout is unchanged but for the entries already written");
      }
    }
    LayoutEntryFiles.Removal removal = LayoutEntryFiles.removeOthers(dir, pluginOf.keySet(), problems);
    Set<String> plugins = new TreeSet<>();
    for (String hex : removal.present()) {
      String plugin = pluginOf.get(hex);
      if (plugin != null && !plugin.isEmpty()) {
        plugins.add(plugin);
      }
    }
    try {
      LayoutManifest.write(dir, plugins);
    } catch (IOException e) {
      throw XlacException.environment("cannot write runtime layout " + dir + ": its manifest: "
          + XlacException.reason(e));
    }
    return new MaterializeResult(written, kept, removal.removed(), damaged, skipped);
  }

  /** The executable could not be read from the cache: damaged (reported by the cache), or gone. */
  private static final class NotReadable extends IOException {
    private static final long serialVersionUID = 1L;

    NotReadable() {
      super("not readable from the cache", null);
    }
  }

  private static String clip(String s) {
    String printable = s.replaceAll("\\p{Cntrl}", "?");
    return printable.length() > 80 ? printable.substring(0, 80) + "..." : printable;
  }
}
