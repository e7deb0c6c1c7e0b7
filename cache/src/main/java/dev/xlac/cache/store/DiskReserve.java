package dev.xlac.cache.store;

import dev.xlac.core.Sizes;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.core.io.SiblingTemporaries;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * The disk reserve of a cache ({@code DIR/reserve}): a file of {@link #targetBytes} bytes that holds
 * nothing, written when a writer opens the cache and none is there, and deleted when the disk is full,
 * so that the database can open, flush what it holds in memory and free space (prune, clear, repair)
 * on a disk that has none left. It is the "emergency ballast" of CockroachDB and its Pebble storage
 * engine. The database keeps less unflushed data than this (see {@link RocksDbStore}), so one flush
 * always fits into a released reserve.
 *
 * <p>Size: 5 % of the file system, at least 1 MiB and at most 64 MiB. It is written only when the file
 * system has room for it and {@link #headroomBytes} more, so writing it never fills the disk itself;
 * its bytes are not zeros, so that a file system that compresses or deduplicates stores them all.
 */
public final class DiskReserve {
  static final String FILE = "reserve";
  static final long MAX_BYTES = 64L << 20;
  static final long MIN_BYTES = 1L << 20;
  /**
   * Tests only: the system property {@code xlac.test.reserveFileBytes} caps the bytes written into the
   * file, so that a test suite making hundreds of caches does not write 64 MiB for each. The sizes
   * derived from the reserve (memtables, headroom) stay those of the real reserve.
   */
  private static final long FILE_BYTES_FOR_TESTS = Long.getLong("xlac.test.reserveFileBytes", 0);
  /** Tests only: when set, the free space of every file system, as {@link #usableSpace} reports it. */
  static volatile java.util.function.LongSupplier usableSpaceForTests;

  private final Path dir;
  private final Path file;
  private final long target;
  private boolean warned;

  /** What {@code cache stat} shows: the reserve's bytes, or 0 and why there is none. */
  public record State(long bytes, long target, String whyNone) {}

  public DiskReserve(Path cacheDir) {
    this.dir = cacheDir;
    this.file = cacheDir.resolve(FILE);
    this.target = targetBytes(totalSpace(cacheDir));
  }

  /** The reserve's size on a file system of {@code totalBytes} (unknown: -1). */
  static long targetBytes(long totalBytes) {
    if (totalBytes <= 0) {
      return MAX_BYTES;
    }
    return Math.max(MIN_BYTES, Math.min(MAX_BYTES, totalBytes / 20));
  }

  /**
   * The free space that must remain beside a newly written reserve: enough to flush all the data the
   * database keeps unflushed (R/2, see {@link RocksDbStore.Buffers}) without touching the reserve.
   */
  static long headroomBytes(long target) {
    return Math.max(MIN_BYTES, target / 2);
  }

  long target() {
    return target;
  }

  /** Whether the reserve file is there (whatever its size: a file system may have been resized since). */
  boolean present() {
    return Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS);
  }

  /**
   * Deletes the reserve; returns the bytes it held (0: there was none). The space is free once the
   * file is gone: nobody holds it open.
   */
  public long release() {
    try {
      long size = Files.size(file);
      Files.delete(file);
      return size;
    } catch (IOException e) {
      return 0; // none there (or one we cannot remove: nothing to gain from it either way)
    }
  }

  /**
   * Writes the reserve when there is none and the file system has room for it and its headroom.
   * Leftovers of a writer killed while writing one are removed first. A reserve that cannot be
   * written is said once ({@code notices}); one that does not fit is just not written ({@code cache
   * stat} says why). Returns whether a reserve is there afterwards.
   */
  boolean ensure(Consumer<String> notices) {
    SiblingTemporaries.removeStale(file); // what a writer killed while writing the reserve left
    if (present()) {
      return true;
    }
    long usable = usableSpace(dir);
    if (usable >= 0 && usable < target + headroomBytes(target)) {
      return false;
    }
    long bytes = FILE_BYTES_FOR_TESTS > 0 ? Math.min(FILE_BYTES_FOR_TESTS, target) : target;
    try {
      // Whole or not at all; the fsync allocates the blocks now, not at some later write-back.
      AtomicFiles.write(file, out -> {
        write(out, bytes);
        return true;
      });
      return true;
    } catch (IOException | RuntimeException e) {
      if (!warned) {
        warned = true;
        notices.accept("cache " + dir + ": cannot write its disk reserve " + file + " (" + Sizes.human(target) + "): "
            + XlacException.reason(e) + "; without it, a full disk may need space freed by hand before the cache"
            + " can be pruned");
      }
      return false;
    }
  }

  private static void write(OutputStream out, long bytes) throws IOException {
    byte[] pattern = "xlac disk reserve: space kept for a full disk; deleted when it is needed\n"
        .getBytes(StandardCharsets.US_ASCII);
    byte[] block = new byte[1 << 20];
    for (int i = 0; i < block.length; i += pattern.length) {
      System.arraycopy(pattern, 0, block, i, Math.min(pattern.length, block.length - i));
    }
    for (long left = bytes; left > 0; ) {
      int n = (int) Math.min(block.length, left);
      out.write(block, 0, n);
      left -= n;
    }
  }

  /** The reserve as {@code cache stat} shows it; readers create nothing, so this only looks. */
  State state() {
    try {
      if (present()) {
        return new State(Files.size(file), target, null);
      }
    } catch (IOException e) {
      // removed meanwhile
    }
    if (!Files.isDirectory(dir.resolve(RocksDbStore.DB_DIR))) {
      return new State(0, target, "no cache yet");
    }
    long usable = usableSpace(dir);
    long needed = target + headroomBytes(target);
    if (usable >= 0 && usable < needed) {
      return new State(0, target, "the disk has " + Sizes.human(usable) + " free; it is written again once "
          + Sizes.human(needed) + " are");
    }
    return new State(0, target, "the next command that writes to the cache writes it");
  }

  /** Bytes free for this user on the file system of {@code dir} (or of its nearest existing parent); -1: unknown. */
  static long usableSpace(Path dir) {
    java.util.function.LongSupplier forTests = usableSpaceForTests;
    if (forTests != null) {
      return forTests.getAsLong();
    }
    FileStore store = fileStore(dir);
    try {
      return store == null ? -1 : store.getUsableSpace();
    } catch (IOException e) {
      return -1;
    }
  }

  private static long totalSpace(Path dir) {
    FileStore store = fileStore(dir);
    try {
      return store == null ? -1 : store.getTotalSpace();
    } catch (IOException e) {
      return -1;
    }
  }

  private static FileStore fileStore(Path dir) {
    for (Path p = dir.toAbsolutePath(); p != null; p = p.getParent()) {
      try {
        return Files.getFileStore(p);
      } catch (IOException e) {
        // not there (yet): ask its parent
      }
    }
    return null;
  }
}
