package dev.xlac.cache.store;

import dev.xlac.core.io.FileTrees;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Replaces a cache's database directory with a freshly built one, such that a crash at any
 * moment leaves either the old database in place or the swap completed (after the next writer's
 * {@link #recover}). All of it happens under the cache's writer lock, and in the cache directory:
 *
 * <pre>
 * DIR/.rebuild-PID/          a fresh cache directory; its db/ is the new database, built and closed there
 * DIR/.rebuild-PID/complete  written (and synced) once that database is complete: "keep" or "discard"
 * DIR/.salvage-PID/db/       a hard-link copy of DIR/db that RocksDB's RepairDB rewrites (a repair's salvage)
 * DIR/db.broken-TIME/        where a repair moves the damaged database, kept for the user to delete
 * DIR/.cleared-PID/          where {@code cache clear} moves the database it replaces before deleting it
 * </pre>
 *
 * The swap is two renames, {@code db -> db.broken-TIME} and {@code .rebuild-PID/db -> db}, after
 * the {@code complete} marker. A crash after the marker leaves the complete rebuilt database
 * waiting: readers read it where it is ({@link #readableDatabase}), and the next writer finishes the
 * swap. A crash before the marker leaves an unfinished rebuild, which the next writer removes, with
 * the old database untouched.
 */
public final class DatabaseSwap {
  static final String REBUILD_PREFIX = ".rebuild-";
  static final String SALVAGE_PREFIX = ".salvage-";
  static final String CLEARED_PREFIX = ".cleared-";
  static final String BROKEN_PREFIX = "db.broken-";
  static final String COMPLETE = "complete";
  private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'")
      .withZone(ZoneOffset.UTC);

  private DatabaseSwap() {}

  /** Where the old database went: {@code kept} (a repair's {@code db.broken-TIME}) or null when it was discarded or absent. */
  public record Swapped(Path kept, long keptBytes) {}

  /** A new, empty directory for this process's rebuild: {@code DIR/.rebuild-PID}. */
  public static Path newRebuildDirectory(Path cacheDir) throws IOException {
    return newPrivateDirectory(cacheDir, REBUILD_PREFIX);
  }

  /** A new, empty directory for this process's salvage copy: {@code DIR/.salvage-PID}. */
  public static Path newSalvageDirectory(Path cacheDir) throws IOException {
    return newPrivateDirectory(cacheDir, SALVAGE_PREFIX);
  }

  private static Path newPrivateDirectory(Path cacheDir, String prefix) throws IOException {
    Path d = cacheDir.resolve(prefix + ProcessHandle.current().pid());
    FileTrees.deleteTree(d);
    Files.createDirectories(d);
    return d;
  }

  /**
   * Marks the rebuilt database in {@code rebuildDir} complete (it must be closed): from now on a
   * crash completes the swap rather than undoing it. {@code keepOld}: whether the database it
   * replaces is kept ({@code db.broken-TIME}) or deleted.
   */
  public static void markComplete(Path rebuildDir, boolean keepOld) throws IOException {
    if (Files.isDirectory(rebuildDir.resolve(RocksDbStore.DB_DIR))) {
      syncTree(rebuildDir.resolve(RocksDbStore.DB_DIR));
    }
    Path tmp = rebuildDir.resolve(COMPLETE + ".tmp");
    Files.writeString(tmp, keepOld ? "keep\n" : "discard\n", StandardCharsets.US_ASCII);
    sync(tmp);
    Files.move(tmp, rebuildDir.resolve(COMPLETE), StandardCopyOption.ATOMIC_MOVE);
    sync(rebuildDir);
  }

  /**
   * Puts the complete rebuilt database of {@code rebuildDir} in place of {@code DIR/db}, moving
   * the old one aside (kept or deleted as the marker says), then removes {@code rebuildDir}.
   */
  static Swapped swap(Path cacheDir, Path rebuildDir, Instant now) throws IOException {
    return swap(cacheDir, rebuildDir, now, step -> { });
  }

  /**
   * As {@link #swap(Path, Path, Instant)}; {@code steps} is told {@code moved} between the two renames (tests
   * kill there).
   */
  public static Swapped swap(Path cacheDir, Path rebuildDir, Instant now, Consumer<String> steps) throws IOException {
    boolean keep = keepsOld(rebuildDir);
    Path db = cacheDir.resolve(RocksDbStore.DB_DIR);
    Path fresh = rebuildDir.resolve(RocksDbStore.DB_DIR);
    Path old = null;
    if (Files.exists(db)) {
      old = keep ? unusedBrokenName(cacheDir, now)
          : cacheDir.resolve(CLEARED_PREFIX + ProcessHandle.current().pid());
      if (!keep) {
        FileTrees.deleteTree(old);
      }
      Files.move(db, old, StandardCopyOption.ATOMIC_MOVE);
      steps.accept("moved");
    }
    if (Files.exists(fresh)) {
      Files.move(fresh, db, StandardCopyOption.ATOMIC_MOVE);
    }
    sync(cacheDir);
    FileTrees.deleteTree(rebuildDir);
    if (old != null && !keep) {
      FileTrees.deleteTree(old);
      return new Swapped(null, 0);
    }
    return new Swapped(old, old == null ? 0 : FileTrees.treeBytes(old));
  }

  /** Whether the complete rebuild in {@code rebuildDir} keeps the database it replaces (a repair) or deletes it (a clear). */
  private static boolean keepsOld(Path rebuildDir) throws IOException {
    return Files.readString(rebuildDir.resolve(COMPLETE), StandardCharsets.US_ASCII).strip().equals("keep");
  }

  private static Path unusedBrokenName(Path cacheDir, Instant now) {
    String base = BROKEN_PREFIX + STAMP.format(now.truncatedTo(ChronoUnit.SECONDS));
    Path p = cacheDir.resolve(base);
    for (int i = 2; Files.exists(p); i++) {
      p = cacheDir.resolve(base + "-" + i);
    }
    return p;
  }

  /**
   * Called by every writer, under the lock, before it opens the database: finishes a swap that a
   * crash interrupted after its rebuild was complete, and removes what unfinished rebuilds, salvage
   * copies and clears left. Each thing done is told to {@code notices}.
   */
  public static void recover(Path cacheDir, Consumer<String> notices) {
    List<Path> children;
    try (var s = Files.list(cacheDir)) {
      children = s.sorted().toList();
    } catch (NoSuchFileException e) {
      return;
    } catch (IOException e) {
      throw RocksDbStore.ioFailure(cacheDir, "cannot list the cache directory", e);
    }
    try {
      for (Path c : children) {
        String n = c.getFileName().toString();
        if (n.startsWith(REBUILD_PREFIX)) {
          if (Files.exists(c.resolve(COMPLETE)) && Files.isDirectory(c.resolve(RocksDbStore.DB_DIR))) {
            boolean keep = keepsOld(c);
            Swapped s = swap(cacheDir, c, Instant.now());
            if (!keep) {
              notices.accept("cache " + cacheDir + ": finished an interrupted 'xlac cache clear'");
              continue;
            }
            Path kept = s.kept() != null ? s.kept() : newestBroken(cacheDir);
            notices.accept("cache " + cacheDir + ": finished replacing its database with the one an interrupted"
                + " 'xlac cache verify --repair' had rebuilt" + (kept == null ? ""
                    : "; the damaged database is in " + kept + " (" + dev.xlac.core.Sizes.human(FileTrees.treeBytes(kept))
                    + "): delete it when you no longer need it"));
          } else {
            FileTrees.deleteTree(c);
          }
        } else if (n.startsWith(SALVAGE_PREFIX) || n.startsWith(CLEARED_PREFIX)) {
          FileTrees.deleteTree(c);
        }
      }
    } catch (IOException e) {
      throw RocksDbStore.ioFailure(cacheDir, "cannot finish an interrupted repair", e);
    }
  }

  private static Path newestBroken(Path cacheDir) throws IOException {
    try (var s = Files.list(cacheDir)) {
      return s.filter(p -> p.getFileName().toString().startsWith(BROKEN_PREFIX)).max(java.util.Comparator.naturalOrder())
          .orElse(null);
    }
  }

  /**
   * The database directory a reader should open: {@code DIR/db}; but while a crash has left a
   * complete rebuilt database waiting to replace it (before or between the swap's renames), that
   * one, which is what the next writer puts in place.
   */
  static Path readableDatabase(Path cacheDir) {
    Path db = cacheDir.resolve(RocksDbStore.DB_DIR);
    if (!Files.isDirectory(cacheDir)) {
      return db;
    }
    try (var s = Files.list(cacheDir)) {
      return s.filter(c -> c.getFileName().toString().startsWith(REBUILD_PREFIX))
          .filter(c -> Files.exists(c.resolve(COMPLETE)) && Files.exists(c.resolve(RocksDbStore.DB_DIR)))
          .map(c -> c.resolve(RocksDbStore.DB_DIR)).findFirst().orElse(db);
    } catch (IOException e) {
      return db;
    }
  }

  /** fsync of a file or (on Linux) a directory; a file system that refuses a directory's fsync is left alone. */
  static void sync(Path p) throws IOException {
    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException e) {
      if (!Files.isDirectory(p)) {
        throw e;
      }
    }
  }

  private static void syncTree(Path dir) throws IOException {
    List<Path> all = new ArrayList<>();
    try (var s = Files.walk(dir)) {
      s.forEach(all::add);
    }
    for (Path p : all.reversed()) {
      sync(p);
    }
  }
}
