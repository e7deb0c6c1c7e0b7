package dev.xlac.cache;

import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Writes runtime-hit records as the fast start does (cache/README.md, "Runtime-hit records"): the exact text, in a
 * private temporary beside its name, fsynced, renamed to a unique {@code <host>-<pid>-<ns>-XXXXXX.hits}, and the
 * directory fsynced.
 */
public final class PendingHitRecords {
  private PendingHitRecords() {}

  /** The record directory of a cache. */
  public static Path dir(Path cache) {
    return cache.resolve("runtime").resolve("pending-hits");
  }

  /** The text of one run's record; {@code hits} in its iteration order. */
  public static String text(long atMillis, long savedNanos, Map<RequestKey, Long> hits) {
    StringBuilder b = new StringBuilder("xlac-pending-hits 1\n");
    b.append("at ").append(atMillis).append('\n');
    b.append("saved_ns ").append(savedNanos).append('\n');
    hits.forEach((k, n) -> b.append("hit ").append(k.text()).append(' ').append(n).append('\n'));
    return b.append("end\n").toString();
  }

  /** Writes one run's record into {@code cache}'s directory, durably; returns its path. */
  public static Path write(Path cache, long atMillis, long savedNanos, Map<RequestKey, Long> hits) throws IOException {
    return writeBytes(cache, text(atMillis, savedNanos, hits).getBytes(StandardCharsets.UTF_8));
  }

  /** Writes any bytes as a finished record (a damaged one, for tests), as {@link #write} does. */
  public static Path writeBytes(Path cache, byte[] bytes) throws IOException {
    Path dir = dir(cache);
    Files.createDirectories(dir.getParent());
    if (!Files.isDirectory(dir)) {
      try {
        Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      } catch (java.nio.file.FileAlreadyExistsException e) {
        // another writer made it
      }
    }
    String unique = String.format("%06x", ThreadLocalRandom.current().nextInt(1 << 24));
    Path tmp = dir.resolve(".tmp-" + unique);
    try (FileChannel ch = FileChannel.open(tmp,
        java.util.Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
      ByteBuffer buf = ByteBuffer.wrap(bytes);
      while (buf.hasRemaining()) {
        ch.write(buf);
      }
      ch.force(true);
    }
    Path target = dir.resolve("testhost-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + "-" + unique
        + ".hits");
    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    }
    return target;
  }
}
