package dev.xlac.core.io;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;

/** Directory trees: removing them (staging and compiler work directories, replaced databases) and their size. */
public final class FileTrees {
  private FileTrees() {}

  /**
   * Deletes {@code root} and everything below it, without following links; nothing to do when it
   * does not exist. Callers that clean up on a best-effort basis ignore the exception.
   */
  public static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    Files.walkFileTree(root, new SimpleFileVisitor<>() {
      @Override
      public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
        Files.deleteIfExists(file);
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
        Files.deleteIfExists(dir);
        return FileVisitResult.CONTINUE;
      }
    });
  }

  /** As {@link #deleteTree}, for a temporary directory: one that cannot be removed is left behind, silently. */
  public static void deleteTreeQuietly(Path root) {
    if (root == null) {
      return;
    }
    try {
      deleteTree(root);
    } catch (IOException | RuntimeException e) {
      // a temporary directory left behind
    }
  }

  /**
   * Bytes of the files below {@code root} (0 when it does not exist); files that vanish while it
   * walks (a database compacting) are skipped. -1 when the tree cannot be read.
   */
  public static long treeBytes(Path root) {
    if (!Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return 0;
    }
    long[] total = {0};
    try {
      Files.walkFileTree(root, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
          total[0] += attrs.size();
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFileFailed(Path file, IOException e) {
          return FileVisitResult.CONTINUE;
        }
      });
    } catch (IOException e) {
      return -1;
    }
    return total[0];
  }
}
