package dev.xlac.core.os;

import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Finding a command on a {@code PATH}, the one lookup in xlac, with the POSIX rules that {@code execvp} (and so a
 * shell, and {@code setsid}) applies to the command: the entries are separated by {@code :} and searched in order,
 * and an empty entry (a leading, trailing or doubled {@code :}, or an empty {@code PATH}) is the current directory.
 * The first regular file of that name that this process may execute wins; directories and files without execute
 * permission are passed over, as {@code execvp} passes over the entries where it cannot run the name.
 *
 * <p>The {@code PATH} is passed in, so a lookup for a child process uses the environment the child will get.
 */
public final class Executables {
  private Executables() {}

  /**
   * The first executable regular file called {@code name} in the directories of {@code pathValue}; empty when
   * {@code pathValue} is null (no {@code PATH} at all) or names none, and for an empty name. An empty entry yields
   * {@code ./name}; an entry that is no valid path here is passed over.
   *
   * @param name a bare command name: a name with a slash is a path, which is never looked up
   * @throws IllegalArgumentException when {@code name} contains a {@code /}
   */
  public static Optional<Path> onPath(String name, String pathValue) {
    if (name.indexOf('/') >= 0) {
      throw new IllegalArgumentException("a path, not a command name to look up: " + name);
    }
    if (pathValue == null || name.isEmpty()) {
      return Optional.empty();
    }
    for (String dir : pathValue.split(":", -1)) { // -1: a trailing empty entry counts too
      Path candidate;
      try {
        candidate = Path.of(dir.isEmpty() ? "." : dir, name);
      } catch (InvalidPathException e) {
        continue;
      }
      if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
        return Optional.of(candidate);
      }
    }
    return Optional.empty();
  }

  /** {@link #onPath(String, String)} with this process's own {@code PATH}. */
  public static Optional<Path> onPath(String name) {
    return onPath(name, System.getenv("PATH"));
  }
}
