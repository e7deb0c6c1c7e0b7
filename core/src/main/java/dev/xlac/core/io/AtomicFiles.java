package dev.xlac.core.io;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The one way xlac replaces a file so that a reader sees either the old bytes or all of the new ones, whatever
 * happens in between (kill -9, a crash, a power cut, a full disk): write a temporary beside the target, fsync it,
 * rename it over the target, fsync the directory. There is no fallback to a non-atomic move; a file system that
 * cannot rename atomically gets an error.
 * <p>Temporaries are {@link SiblingTemporaries#unique} names, so threads and processes writing the same target at
 * once never share one, and the last rename wins with whole bytes. Stale temporaries of the target (their process is
 * gone) are removed before each write. A write that fails, or whose body gives up, leaves the target as it was and
 * removes its temporary.
 */
public final class AtomicFiles {
  private static final int BUFFER = 1 << 16;

  private AtomicFiles() {}

  /** Writes a file's new contents; returns false to give up, leaving the target as it was. */
  @FunctionalInterface
  public interface Body {
    boolean writeTo(OutputStream out) throws IOException;
  }

  /** Replaces {@code target} with what {@code body} writes; false (nothing changed) when the body gives up. */
  public static boolean write(Path target, Body body) throws IOException {
    return write(target, null, body);
  }

  /**
   * As {@link #write(Path, Body)}, the file created with {@code permissions} from the start (so a secret is never
   * readable by others, not even as a temporary); null keeps the process's default. Ignored where the file system
   * has no POSIX permissions.
   */
  public static boolean write(Path target, Set<PosixFilePermission> permissions, Body body) throws IOException {
    Path abs = target.toAbsolutePath();
    SiblingTemporaries.removeStale(abs);
    Path tmp = create(abs, permissions);
    boolean moved = false;
    try {
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
        OutputStream out = new BufferedOutputStream(Channels.newOutputStream(ch), BUFFER);
        if (!body.writeTo(out)) {
          return false;
        }
        out.flush();
        ch.force(true);
      }
      Files.move(tmp, abs, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      moved = true;
      syncDirectory(abs.getParent());
      return true;
    } finally {
      if (!moved) {
        Files.deleteIfExists(tmp);
      }
    }
  }

  /** Replaces {@code target} with {@code bytes}. */
  public static void writeBytes(Path target, byte[] bytes) throws IOException {
    write(target, out -> {
      out.write(bytes);
      return true;
    });
  }

  /** Replaces {@code target} with {@code text} in UTF-8. */
  public static void writeString(Path target, String text) throws IOException {
    writeBytes(target, text.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Makes a rename or a new entry in {@code dir} durable. File systems that cannot sync a directory (some network
   * and FUSE ones) are skipped: the rename itself stays atomic there.
   */
  public static void syncDirectory(Path dir) {
    if (dir == null) {
      return;
    }
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException | UnsupportedOperationException e) {
      // not supported for directories here; the rename is still atomic
    }
  }

  /**
   * Creates a new temporary for {@code target}. A name that exists already belongs to some other writer (a process
   * with this PID in another PID namespace sharing the directory, or one before a PID was reused): it is left alone
   * and the next name is taken.
   */
  private static Path create(Path target, Set<PosixFilePermission> permissions) throws IOException {
    FileAttribute<?>[] attrs = permissions == null
        ? new FileAttribute<?>[0] : new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(permissions)};
    for (int attempt = 0; ; attempt++) {
      Path tmp = SiblingTemporaries.unique(target);
      try {
        try {
          return Files.createFile(tmp, attrs);
        } catch (UnsupportedOperationException e) {
          return Files.createFile(tmp); // no POSIX permissions on this file system
        }
      } catch (FileAlreadyExistsException e) {
        if (attempt >= 1000) {
          throw e;
        }
      }
    }
  }
}
