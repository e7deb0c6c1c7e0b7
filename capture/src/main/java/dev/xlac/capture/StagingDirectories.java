package dev.xlac.capture;

import dev.xlac.core.XlacException;
import dev.xlac.core.io.FileTrees;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * The directories one trace owns: where the dumps go ({@code --keep-dumps DIR}, else a temporary
 * directory) and a temporary directory for helper files. Closing removes the temporary ones; a
 * kept dump directory stays.
 */
public final class StagingDirectories implements AutoCloseable {
  private final Path dumps;
  private final boolean keep;

  private StagingDirectories(Path dumps, boolean keep) {
    this.dumps = dumps;
    this.keep = keep;
  }

  /**
   * @param keepDumps the user's {@code --keep-dumps DIR}, or null. It is created if missing and must
   *     be empty, so that old dumps are not taken for new ones.
   */
  public static StagingDirectories create(Path keepDumps) {
    Path dumps;
    if (keepDumps != null) {
      dumps = keepDumps.toAbsolutePath().normalize();
      try {
        Files.createDirectories(dumps);
      } catch (AccessDeniedException e) {
        throw XlacException.badInput("--keep-dumps " + keepDumps + ": cannot create it (permission denied)");
      } catch (IOException e) {
        throw XlacException.badInput(
            "--keep-dumps " + keepDumps + ": cannot create it (" + XlacException.reason(e) + ")");
      }
      if (!Files.isWritable(dumps)) {
        throw XlacException.badInput("--keep-dumps " + keepDumps + ": directory is not writable");
      }
      try (Stream<Path> entries = Files.list(dumps)) {
        if (entries.findAny().isPresent()) {
          throw XlacException.badInput("--keep-dumps " + keepDumps
              + ": directory is not empty (xlac would take old dumps for new ones); name a new or empty directory");
        }
      } catch (IOException e) {
        throw XlacException.badInput(
            "--keep-dumps " + keepDumps + ": cannot list it (" + XlacException.reason(e) + ")");
      }
    } else {
      dumps = temp("xlac-dump-");
    }
    return new StagingDirectories(dumps, keepDumps != null);
  }

  private static Path temp(String prefix) {
    try {
      return Files.createTempDirectory(prefix);
    } catch (IOException e) {
      throw XlacException.environment("cannot create a temporary directory in " + System.getProperty("java.io.tmpdir")
          + " (" + XlacException.reason(e) + ")");
    }
  }

  public Path dumps() {
    return dumps;
  }

  public boolean keptDumps() {
    return keep;
  }

  @Override
  public void close() {
    if (!keep) {
      deleteTree(dumps);
    }
  }

  static void deleteTree(Path root) {
    try {
      FileTrees.deleteTree(root);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove " + root, e);
    }
  }

}
