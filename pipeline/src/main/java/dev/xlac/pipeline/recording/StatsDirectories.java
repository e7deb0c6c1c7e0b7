package dev.xlac.pipeline.recording;

import dev.xlac.core.XlacException;
import dev.xlac.core.os.HostName;
import dev.xlac.runtime.RunStatistics;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.UserPrincipal;
import java.util.function.Consumer;

/**
 * A run's statistics directory ({@code XLAC_PJRT_STATS}) in the temporary directory, named
 * {@code xlac-run-stats-<host>-<pidns>-<pid>-<start>-<random>} after the process that made it (the run's JVM, or the
 * fast start, which execs the JVM and keeps its pid): {@code <pidns>} is its PID namespace ({@code ns} and the inode of
 * {@code /proc/self/ns/pid}), because containers on one node share the host name and the temporary directory but not
 * the pids they can see; {@code <start>} is the process's start time in clock ticks since boot
 * ({@code /proc/<pid>/stat}), so a pid used again by another process is told apart. A run removes its own directory
 * when it ends; one killed with kill -9 cannot, and a later run of the same host and namespace removes it
 * ({@link #removeStale}), as it does those of killed recording captures ({@link #RECORD_PREFIX}).
 */
public final class StatsDirectories {
  private StatsDirectories() {}

  public static final String PREFIX = "xlac-run-stats-";
  /** The statistics directory of a recording capture ({@code dump --plugin}, a one-shot {@code parallel-compile}). */
  static final String RECORD_PREFIX = "xlac-record-stats-";
  static final String HOST = host();
  /** Stands for a PID namespace that cannot be read: a directory named with it is never taken as stale. */
  static final String UNKNOWN_NAMESPACE = "nsunknown";
  /** This process's PID namespace as names carry it, e.g. {@code ns4026531836}. */
  static final String NAMESPACE = pidNamespace();

  /** A new statistics directory of this process's run (mode 0700) in the temporary directory. */
  public static Path create() throws IOException {
    return create(PREFIX);
  }

  /** As {@link #create()}, named with {@code prefix} ({@link #PREFIX} or {@link #RECORD_PREFIX}). */
  public static Path create(String prefix) throws IOException {
    long pid = ProcessHandle.current().pid();
    return Files.createTempDirectory(prefix + HOST + "-" + NAMESPACE + "-" + pid + "-" + startTicks(pid) + "-");
  }

  /** What the proxy's processes counted in {@code stats}; none (and one line saying why) when it cannot be read. */
  public static RunStatistics statistics(Path stats, Consumer<String> notices) {
    try {
      return RunStatistics.read(stats);
    } catch (IOException | XlacException e) {
      notices.accept("cannot read the runtime proxy's statistics: " + XlacException.reason(e));
      return RunStatistics.NONE;
    }
  }

  /**
   * Removes, from the directory {@code own} is in, the statistics directories of runs of this host whose process is
   * gone: only directories of the owner of {@code own} (this user), never through a symbolic link, each emptied of
   * the files directly in it and then removed; anything else in one (a directory) keeps it. The number removed;
   * nothing fails.
   */
  public static int removeStale(Path own) {
    int removed = 0;
    try {
      Path parent = own.toAbsolutePath().getParent();
      UserPrincipal me = Files.getOwner(own, LinkOption.NOFOLLOW_LINKS);
      try (DirectoryStream<Path> list = Files.newDirectoryStream(parent, "xlac-{run,record}-stats-*")) {
        if (!(list instanceof SecureDirectoryStream<Path> dir)) {
          return 0; // no way to work inside the directory without following a link swapped in meanwhile
        }
        for (Path p : list) {
          Path name = p.getFileName();
          if (staleName(name.toString()) && removeIfOurs(dir, name, me)) {
            removed++;
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      // the next run looks again
    }
    return removed;
  }

  /**
   * Whether {@code name} is a statistics directory of this host and PID namespace whose process is gone (or is another
   * now). One of another namespace (another container on this node), of an unknown one, or named without one (an older
   * build) is not: its pid cannot be looked up here.
   */
  static boolean staleName(String name) {
    String prefix = name.startsWith(PREFIX) ? PREFIX : name.startsWith(RECORD_PREFIX) ? RECORD_PREFIX : null;
    if (prefix == null) {
      return false;
    }
    // <host>-<pidns>-<pid>-<start>-<random>: none of them holds '-'
    String[] part = name.substring(prefix.length()).split("-", -1);
    if (part.length != 5 || !part[0].equals(HOST) || !part[1].equals(NAMESPACE) || NAMESPACE.equals(UNKNOWN_NAMESPACE)) {
      return false;
    }
    try {
      long p = Long.parseLong(part[2]);
      long ticks = Long.parseLong(part[3]);
      return p > 0 && !running(p, ticks);
    } catch (NumberFormatException e) {
      return false;
    }
  }

  private static boolean running(long pid, long startTicks) {
    if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
      long now = startTicks(pid);
      return now < 0 || startTicks < 0 || now == startTicks; // unknown: taken as the same process
    }
    return false;
  }

  private static boolean removeIfOurs(SecureDirectoryStream<Path> parent, Path name, UserPrincipal me)
      throws IOException {
    PosixFileAttributes a = parent.getFileAttributeView(name, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
        .readAttributes();
    if (!a.isDirectory() || a.isSymbolicLink() || !a.owner().equals(me)) {
      return false;
    }
    try (SecureDirectoryStream<Path> dir = parent.newDirectoryStream(name, LinkOption.NOFOLLOW_LINKS)) {
      for (Path f : dir) {
        try {
          dir.deleteFile(f.getFileName()); // a file or a link itself; a directory stays, and keeps this one
        } catch (IOException e) {
          // left; the directory stays too
        }
      }
    }
    try {
      parent.deleteDirectory(name);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** Field 22 of {@code /proc/<pid>/stat}: when the process started, in clock ticks since boot; -1 if unknown. */
  static long startTicks(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
      String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return Long.parseLong(fields[22 - 3]);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** {@code ns} and the inode of this process's PID namespace, from {@code /proc/self/ns/pid} ("pid:[4026531836]"). */
  private static String pidNamespace() {
    try {
      String link = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
      if (link.matches("pid:\\[[0-9]+\\]")) {
        return "ns" + link.substring(5, link.length() - 1);
      }
    } catch (IOException | RuntimeException e) {
      // below
    }
    return UNKNOWN_NAMESPACE;
  }

  /** This host's name as the kernel has it, each byte outside {@code [A-Za-z0-9.]} made '_' (as the fast start does). */
  private static String host() {
    String name = HostName.kernel().orElse("");
    StringBuilder b = new StringBuilder();
    for (byte c : name.getBytes(StandardCharsets.UTF_8)) {
      b.append(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' ? (char) c : '_');
    }
    return b.isEmpty() ? "localhost" : b.toString();
  }
}
