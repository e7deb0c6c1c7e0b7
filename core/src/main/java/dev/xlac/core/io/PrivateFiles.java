package dev.xlac.core.io;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * Directories and files that only their owner may read or write ({@code 0700}, {@code 0600}), whatever the umask:
 * the runtime proxy serves executables from the cache's layout and trusts nothing that another user could have
 * written, and a shared group's umask {@code 002} would otherwise leave everything group-writable. Where the file
 * system has no POSIX permissions, the default ones.
 */
public final class PrivateFiles {
  public static final Set<PosixFilePermission> DIRECTORY = PosixFilePermissions.fromString("rwx------");
  public static final Set<PosixFilePermission> FILE = PosixFilePermissions.fromString("rw-------");

  private PrivateFiles() {}

  /** Creates {@code dir} and its missing parents as private directories; existing ones are left as they are. */
  public static Path createDirectories(Path dir) throws IOException {
    try {
      return Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(DIRECTORY));
    } catch (UnsupportedOperationException e) {
      return Files.createDirectories(dir);
    }
  }

  /** Replaces {@code target} atomically ({@link AtomicFiles}) with a private file holding {@code bytes}. */
  public static void writeBytes(Path target, byte[] bytes) throws IOException {
    AtomicFiles.write(target, FILE, out -> {
      out.write(bytes);
      return true;
    });
  }

  /** {@link #writeBytes} of {@code text} in UTF-8. */
  public static void writeString(Path target, String text) throws IOException {
    writeBytes(target, text.getBytes(StandardCharsets.UTF_8));
  }
}
