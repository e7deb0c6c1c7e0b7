package dev.xlac.capture;

import java.io.IOException;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/** Which files under a directory some processes hold open, from Linux's {@code /proc/<pid>/fd} links. */
final class OpenFiles {
  private static final Path PROC = Path.of("/proc");

  private OpenFiles() {}

  /** Whether {@code /proc/<pid>/fd} can be read on this machine at all (Linux with procfs mounted). */
  static boolean available() {
    return Files.isDirectory(PROC.resolve("self/fd"));
  }

  /**
   * The files under {@code realRoot} (a real path: fd links name real paths) that any of
   * {@code processes} holds open. A process that has exited meanwhile is skipped. Empty when the
   * answer is unknown: no process given, no {@code /proc}, the first process (the command) ended
   * during the scan (its orphans can no longer be found), or the fd directory of a live process
   * cannot be read (another user's process, a hardened {@code /proc}).
   */
  static Optional<Set<Path>> heldUnder(Path realRoot, List<ProcessHandle> processes) {
    if (processes.isEmpty() || !available()) {
      return Optional.empty();
    }
    Set<Path> open = new HashSet<>();
    for (ProcessHandle p : processes) {
      Path fdDir = PROC.resolve(Long.toString(p.pid())).resolve("fd");
      try (DirectoryStream<Path> fds = Files.newDirectoryStream(fdDir)) {
        for (Path fd : fds) {
          Path target;
          try {
            target = Files.readSymbolicLink(fd);
          } catch (NoSuchFileException e) {
            continue; // closed since the listing: not open
          }
          if (target.startsWith(realRoot)) {
            open.add(target);
          }
        }
      } catch (NoSuchFileException e) {
        continue; // exited meanwhile
      } catch (IOException | DirectoryIteratorException e) {
        if (p.isAlive()) {
          return Optional.empty();
        }
      }
    }
    return processes.getFirst().isAlive() ? Optional.of(open) : Optional.empty();
  }
}
