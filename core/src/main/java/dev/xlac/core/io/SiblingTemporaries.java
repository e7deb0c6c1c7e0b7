package dev.xlac.core.io;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Temporary files written beside their target and then renamed over it: {@code .NAME.tmp-PID}, named after the
 * process that writes them, or {@code .NAME.tmp-PID.N} when one process may write the same target from several
 * threads at once ({@link #unique}). A writer killed before the rename (kill -9, a crash, a power cut) leaves its
 * temporary behind; the next writer of the same target removes those whose process is gone.
 * <p>A temporary is stale when no process has its PID, or when the process that has it now is not xlac (the PID
 * was reused). One of a live xlac process is left alone: it may be writing it. Only regular files that match
 * the pattern exactly, for this target's name, are considered; the process's own are never removed.
 * Processes are looked up in this machine's PID namespace, so two machines or containers writing the same
 * target in one shared directory at the same time can remove each other's temporary (that writer's rename then
 * fails with an error; nothing wrong is left).
 */
public final class SiblingTemporaries {
  /** What a command line of xlac holds (the launcher's main class). */
  static final String XLAC_MAIN = "dev.xlac.cli.Main";

  private SiblingTemporaries() {}

  /** A temporary that was removed, and its size in bytes. */
  public record Removed(Path file, long bytes) {}

  /** This process's temporary for {@code target}. */
  public static Path of(Path target) {
    Path abs = target.toAbsolutePath();
    return abs.resolveSibling(prefix(abs) + ProcessHandle.current().pid());
  }

  private static final java.util.concurrent.atomic.AtomicLong SEQUENCE = new java.util.concurrent.atomic.AtomicLong();

  /**
   * A temporary for {@code target} that no other write of this process uses: {@code .NAME.tmp-PID.N}. Stale ones
   * are found and removed by {@link #removeStale} like the others.
   */
  public static Path unique(Path target) {
    Path abs = target.toAbsolutePath();
    return abs.resolveSibling(prefix(abs) + ProcessHandle.current().pid() + "." + SEQUENCE.incrementAndGet());
  }

  /** Removes the stale temporaries of {@code target}; what could not be listed or removed is left as it is. */
  public static List<Removed> removeStale(Path target) {
    Path abs = target.toAbsolutePath();
    Path dir = abs.getParent();
    String prefix = prefix(abs);
    long self = ProcessHandle.current().pid();
    List<Removed> removed = new ArrayList<>();
    if (dir == null || !Files.isDirectory(dir)) {
      return removed;
    }
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir, p -> pidOf(p, prefix) > 0)) {
      for (Path p : entries) {
        long pid = pidOf(p, prefix);
        if (pid == self || !isStale(pid)) {
          continue;
        }
        try {
          BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
          if (a.isRegularFile() && Files.deleteIfExists(p)) {
            removed.add(new Removed(p, a.size()));
          }
        } catch (IOException e) {
          // gone already, or not ours to remove: left as it is
        }
      }
    } catch (IOException e) {
      // the directory cannot be listed: the write that follows will say why
    }
    return removed;
  }

  private static String prefix(Path abs) {
    return "." + abs.getFileName() + ".tmp-";
  }

  /** The PID in {@code .NAME.tmp-PID} or {@code .NAME.tmp-PID.N}, or -1 when {@code p} is not named so. */
  static long pidOf(Path p, String prefix) {
    String name = p.getFileName().toString();
    if (!name.startsWith(prefix)) {
      return -1;
    }
    String digits = name.substring(prefix.length());
    int dot = digits.indexOf('.');
    if (dot >= 0) {
      String sequence = digits.substring(dot + 1);
      if (sequence.isEmpty() || sequence.length() > 18 || !sequence.chars().allMatch(c -> c >= '0' && c <= '9')) {
        return -1;
      }
      digits = digits.substring(0, dot);
    }
    if (digits.isEmpty() || digits.length() > 18 || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
      return -1;
    }
    return Long.parseLong(digits);
  }

  /** No process has {@code pid}, or the one that has it is not xlac. Unknown (the system does not say): not stale. */
  public static boolean isStale(long pid) {
    Optional<ProcessHandle> h = ProcessHandle.of(pid);
    if (h.isEmpty() || !h.get().isAlive()) {
      return true;
    }
    Optional<String[]> args = h.get().info().arguments();
    if (args.isEmpty()) {
      return false;
    }
    for (String a : args.get()) {
      if (a.equals(XLAC_MAIN)) {
        return false;
      }
    }
    return true;
  }
}
