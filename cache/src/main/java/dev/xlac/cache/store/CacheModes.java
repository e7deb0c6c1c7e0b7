package dev.xlac.cache.store;

import dev.xlac.cache.VerifyReport;
import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * The permissions {@code cache verify} checks and {@code --repair} fixes: no directory of the cache, and no file of
 * its runtime tree ({@code runtime/}: the layout, record spools, plugin memos, the stamp), may be writable by its group
 * or others. The runtime proxy serves executables from the layout and refuses one that others could have written
 * (runtime/README.md); xlac creates all of these private, but a copy, a {@code chmod} or an older xlac under a shared
 * group's umask may not have. The database's own files are written by RocksDB with the umask's modes; the private
 * directories around them keep others out. Links are not followed.
 */
public final class CacheModes {
  private static final Set<PosixFilePermission> OTHERS_WRITE = EnumSet.of(PosixFilePermission.GROUP_WRITE,
      PosixFilePermission.OTHERS_WRITE);

  private CacheModes() {}

  /** One problem per directory or runtime file that its group or others can write; none where there are no POSIX permissions. */
  public static List<VerifyReport.Problem> check(Path cacheDir) {
    return walk(cacheDir, false);
  }

  /**
   * Takes the group's and others' write permission from each such directory and file: the problems found, each with
   * the action {@code repaired}, or without one (and the reason) where it could not be changed.
   */
  public static List<VerifyReport.Problem> repair(Path cacheDir) {
    return walk(cacheDir, true);
  }

  private static List<VerifyReport.Problem> walk(Path cacheDir, boolean repair) {
    List<VerifyReport.Problem> problems = new ArrayList<>();
    Path root = cacheDir.toAbsolutePath().normalize();
    Path runtime = root.resolve("runtime");
    if (!Files.isDirectory(root)) {
      return problems;
    }
    try {
      Files.walkFileTree(root, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
          look(dir);
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
          if (attrs.isRegularFile() && file.startsWith(runtime)) {
            look(file);
          }
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFileFailed(Path file, IOException e) {
          return FileVisitResult.CONTINUE; // gone meanwhile, or unreadable: nothing to say about its mode
        }

        private void look(Path p) {
          Set<PosixFilePermission> mode;
          try {
            mode = Files.getPosixFilePermissions(p, java.nio.file.LinkOption.NOFOLLOW_LINKS);
          } catch (IOException | UnsupportedOperationException e) {
            return;
          }
          if (mode.stream().noneMatch(OTHERS_WRITE::contains)) {
            return;
          }
          String name = "permissions of " + (p.equals(root) ? root.toString() : root.relativize(p).toString());
          String was = PosixFilePermissions.toString(mode);
          if (!repair) {
            problems.add(new VerifyReport.Problem(name, "its group or others can write it (" + was + "), so the"
                + " runtime proxy serves nothing from under it", false));
            return;
          }
          Set<PosixFilePermission> fixed = EnumSet.copyOf(mode);
          fixed.removeAll(OTHERS_WRITE);
          try {
            Files.setPosixFilePermissions(p, fixed);
            problems.add(new VerifyReport.Problem(name, "its group or others could write it (" + was + ", now "
                + PosixFilePermissions.toString(fixed) + ")", false, "repaired"));
          } catch (IOException | RuntimeException e) {
            problems.add(new VerifyReport.Problem(name, "its group or others can write it (" + was + "), and it"
                + " cannot be changed: " + e.getMessage(), false));
          }
        }
      });
    } catch (IOException e) {
      // the cache directory cannot be walked: what was seen is reported
    }
    return problems;
  }
}
