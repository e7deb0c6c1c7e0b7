package dev.xlac.runtime;

import dev.xlac.core.io.AtomicFiles;
import dev.xlac.core.io.PrivateFiles;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * One entry file of a runtime layout, {@code DIR/entries/<hh>/<hex>.xpx} (runtime/README.md "The runtime layout"):
 * a 96-byte header (magic, key, size, SHA-256, compile nanoseconds, reserved) and the serialized executable.
 */
public final class LayoutEntry {
  public static final int HEADER = 96;
  public static final byte[] MAGIC = "XLACPJX1".getBytes(StandardCharsets.US_ASCII);
  public static final String DIRECTORY = "entries";
  public static final String SUFFIX = ".xpx";

  private LayoutEntry() {}

  /** Writes what it is given to an output stream; may throw IOException. */
  @FunctionalInterface
  public interface IoConsumer<T> {
    void accept(T value) throws IOException;
  }

  /** Where the entry of {@code key} lives in {@code layoutDir}. */
  public static Path path(Path layoutDir, RequestKey key) {
    String hex = key.hex();
    return layoutDir.resolve(DIRECTORY).resolve(hex.substring(0, 2)).resolve(hex + SUFFIX);
  }

  /** The 96 header bytes of an entry. */
  public static byte[] header(RequestKey key, byte[] sha256, long size, long compileNanos) {
    if (sha256.length != 32 || size < 0) {
      throw new IllegalArgumentException("a layout entry needs a 32-byte SHA-256 and a size >= 0");
    }
    ByteBuffer b = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
    b.put(MAGIC).put(key.digest()).putLong(size).put(sha256).putLong(compileNanos).putLong(0);
    return b.array();
  }

  /**
   * Writes one entry atomically (a unique temporary beside it, fsync, rename, directory fsync), streaming the
   * executable: {@code executable} writes its bytes to the stream it is given. The bytes are counted and hashed as
   * they pass; unless they are exactly {@code size} bytes with this SHA-256, nothing is renamed into place (the
   * entry stays as it was), the temporary is removed and an IOException says so.
   */
  public static void write(Path layoutDir, RequestKey key, byte[] sha256, long size, long compileNanos,
      IoConsumer<OutputStream> executable) throws IOException {
    Path target = path(layoutDir, key);
    Path parent = target.getParent();
    if (!Files.isDirectory(parent)) {
      PrivateFiles.createDirectories(parent); // the proxy serves nothing that others can write
      AtomicFiles.syncDirectory(parent.getParent());
      AtomicFiles.syncDirectory(layoutDir);
    }
    byte[] header = header(key, sha256, size, compileNanos);
    AtomicFiles.write(target, PrivateFiles.FILE, out -> {
      out.write(header);
      Checked checked = new Checked(out);
      executable.accept(checked);
      if (checked.count != size) {
        throw new ExecutableMismatchException("the executable of " + key.text() + " came to " + checked.count
            + " bytes, not " + size);
      }
      if (!MessageDigest.isEqual(checked.sha.digest(), sha256)) {
        throw new ExecutableMismatchException("the executable of " + key.text() + " does not match its SHA-256");
      }
      return true;
    });
  }

  /**
   * The header check the proxy makes before it reads on (and what an incremental materialize may trust): the file
   * is exactly {@code 96 + size} bytes, and its magic, key, size and SHA-256 fields are these.
   */
  public static boolean headerMatches(Path file, RequestKey key, byte[] sha256, long size) {
    try {
      if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS) || Files.size(file) != HEADER + size) {
        return false;
      }
      byte[] h = new byte[HEADER];
      try (InputStream in = Files.newInputStream(file, LinkOption.NOFOLLOW_LINKS)) {
        if (in.readNBytes(h, 0, HEADER) != HEADER) {
          return false;
        }
      }
      byte[] want = header(key, sha256, size, 0);
      return Arrays.equals(h, 0, 80, want, 0, 80);
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * {@link #headerMatches} and the executable bytes' SHA-256 too (the file is read whole, a piece at a time): what
   * the proxy checks before it serves an entry.
   */
  public static boolean matches(Path file, RequestKey key, byte[] sha256, long size) {
    if (!headerMatches(file, key, sha256, size)) {
      return false;
    }
    MessageDigest sha = RequestKey.sha256();
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
        InputStream in = Channels.newInputStream(ch.position(HEADER))) {
      byte[] buf = new byte[1 << 16];
      long total = 0;
      for (int n; (n = in.read(buf)) > 0; ) {
        sha.update(buf, 0, n);
        total += n;
      }
      return total == size && MessageDigest.isEqual(sha.digest(), sha256);
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * The executable handed to {@link #write} was not the one its size and SHA-256 describe (its source is damaged):
   * nothing was renamed into place. Any other IOException of {@code write} is the layout's own (a full disk).
   */
  public static final class ExecutableMismatchException extends IOException {
    private static final long serialVersionUID = 1L;

    ExecutableMismatchException(String message) {
      super(message);
    }
  }

  /** Counts and hashes what passes to the entry file. */
  private static final class Checked extends FilterOutputStream {
    final MessageDigest sha = RequestKey.sha256();
    long count;

    Checked(OutputStream out) {
      super(out);
    }

    @Override
    public void write(int b) throws IOException {
      out.write(b);
      sha.update((byte) b);
      count++;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
      sha.update(b, off, len);
      count += len;
    }

    @Override
    public void close() {
      // the entry file is closed by its writer
    }
  }
}
