package dev.xlac.cache.bundle;

import static dev.xlac.cache.bundle.BundleManifest.printable;

import com.github.luben.zstd.ZstdInputStream;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.SiblingTemporaries;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloFileKind;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.HloReadException;
import dev.xlac.hlo.LoadedModule;
import java.io.BufferedOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.zip.CRC32C;

/**
 * What the first import pass checks of a bundle beyond each entry's SHA-256, so that the content
 * decides and the manifest only describes it: every graph entry is one zstd frame that
 * decompresses to exactly the manifest's size, into an HLO module whose fingerprint is the one it
 * is filed under and whose name is the manifest's; every log entry is one zstd frame of exactly
 * the manifest's raw size. Modules of {@value #HEAP_MODULE_BYTES} bytes or more are decompressed
 * into a scratch file in the cache directory and fingerprinted from a mapping of it, so the heap
 * holds at most the reader's index, whatever the module's size.
 */
final class BundleContent implements AutoCloseable {
  /** Smaller modules are checked on the heap (the hlo reader maps files from this size on). */
  static final long HEAP_MODULE_BYTES = 1 << 20;

  private final Path scratch;
  private final HloModuleReader reader = new HloModuleReader();
  private final byte[] buffer = new byte[1 << 16];
  private final UnpackCounter unpacked;

  /** {@code unpacked}: counts the decompressed bytes of modules and logs against the import's limit. */
  BundleContent(Path cacheDir, UnpackCounter unpacked) {
    // .import-graph.tmp-PID; those of importers that died (kill -9) are removed
    Path name = cacheDir.resolve("import-graph");
    SiblingTemporaries.removeStale(name);
    scratch = SiblingTemporaries.of(name);
    this.unpacked = unpacked;
  }

  /**
   * Reads the current tar entry, a graph's compressed module of {@code x.size()} bytes, into
   * {@code sha} and {@code crc}, and checks it as the class comment says.
   *
   * @throws IllegalArgumentException what is wrong, naming the entry (a checksum failure first)
   */
  void checkGraph(InputStream tar, String name, BundleManifest.Graph g, BundleManifest.Expected x, MessageDigest sha,
      CRC32C crc) throws IOException {
    boolean onHeap = g.rawBytes() < HEAP_MODULE_BYTES;
    HeapSink heap = onHeap ? new HeapSink((int) g.rawBytes()) : null;
    try (OutputStream sink = onHeap ? heap : new BufferedOutputStream(Files.newOutputStream(scratch), 1 << 20)) {
      decompress(tar, name, x, g.rawBytes(), "module", sha, crc, sink);
    }
    if (g.rawBytes() == 0) {
      throw new IllegalArgumentException("entry '" + name + "' holds an empty module");
    }
    LoadedModule module;
    try {
      module = onHeap ? reader.parse(Path.of(name), HloFileKind.HLO_MODULE, heap.bytes, heap.bytes.length)
          : reader.read(scratch, HloFileKind.HLO_MODULE);
    } catch (HloReadException e) {
      throw new IllegalArgumentException("entry '" + name + "' is not a valid HLO module (" + e.reason() + ")");
    }
    String filedUnder = GraphFingerprint.VERSION + ":" + g.fp();
    if (!module.fingerprint().value().equals(filedUnder)) {
      throw new IllegalArgumentException("entry '" + name + "' holds a module whose fingerprint is "
          + module.fingerprint().value() + ", not the " + filedUnder + " it is filed under");
    }
    if (!module.moduleName().equals(g.module())) {
      throw new IllegalArgumentException("graph " + g.fp().substring(0, 12) + " is named '" + printable(g.module())
          + "' in the manifest, but its module is named '" + printable(module.moduleName()) + "'");
    }
  }

  /** As {@link #checkGraph} for a compressed log of {@code rawBytes} bytes, which is only counted. */
  void checkLog(InputStream tar, String name, BundleManifest.Expected x, long rawBytes, MessageDigest sha, CRC32C crc)
      throws IOException {
    decompress(tar, name, x, rawBytes, "log", sha, crc, OutputStream.nullOutputStream());
  }

  /**
   * Decompresses the entry into {@code sink}, feeding its compressed bytes to the digests. The
   * checksum is checked before anything found in the content is reported, so damage reads as
   * damage.
   */
  private void decompress(InputStream tar, String name, BundleManifest.Expected x, long rawBytes, String what,
      MessageDigest sha, CRC32C crc, OutputStream sink) throws IOException {
    EntryStream entry = new EntryStream(tar, x.size(), name, sha, crc);
    ZstdFrameStream frame = new ZstdFrameStream(entry);
    String problem = null;
    long raw = 0;
    try (ZstdInputStream z = new ZstdInputStream(frame)) {
      for (int n; (n = z.read(buffer)) >= 0; ) {
        raw += n;
        if (raw > rawBytes) {
          problem = "its " + what + " is larger than the " + rawBytes + " bytes the manifest gives";
          break;
        }
        unpacked.add(n);
        sink.write(buffer, 0, n);
      }
      if (problem == null && !frame.ended()) {
        problem = "its zstd frame is truncated";
      } else if (problem == null && frame.trailingData()) {
        problem = "it has data after its zstd frame";
      }
    } catch (IOException e) {
      if (entry.truncated) {
        throw new IllegalArgumentException("entry '" + name + "' is truncated");
      }
      problem = "it is not valid zstd data (" + XlacException.reason(e) + ")";
    }
    entry.drain();
    if (!HexFormat.of().formatHex(sha.digest()).equals(x.sha())) {
      throw new IllegalArgumentException("entry '" + name + "' fails its checksum");
    }
    if (problem != null) {
      throw new IllegalArgumentException("entry '" + name + "': " + problem);
    }
    if (raw != rawBytes) {
      throw new IllegalArgumentException("entry '" + name + "' holds a " + what + " of " + raw
          + " bytes; the manifest says " + rawBytes);
    }
  }

  @Override
  public void close() {
    try {
      Files.deleteIfExists(scratch);
    } catch (IOException e) {
      // best effort; the next import removes it
    }
  }

  /** The current tar entry's bytes, at most {@code size}, into the digests; closing it leaves the tar open. */
  private static final class EntryStream extends FilterInputStream {
    private final String name;
    private final MessageDigest sha;
    private final CRC32C crc;
    private long left;
    boolean truncated;

    EntryStream(InputStream tar, long size, String name, MessageDigest sha, CRC32C crc) {
      super(tar);
      this.left = size;
      this.name = name;
      this.sha = sha;
      this.crc = crc;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (left == 0) {
        return -1;
      }
      int n = in.read(b, off, (int) Math.min(len, left));
      if (n < 0) {
        truncated = true;
        return -1;
      }
      sha.update(b, off, n);
      crc.update(b, off, n);
      left -= n;
      return n;
    }

    @Override
    public long skip(long n) {
      return 0;
    }

    @Override
    public int available() {
      return 0;
    }

    @Override
    public void close() {
      // the tar stream stays open for the next entry
    }

    /** Reads what the decompressor left, so the digests cover the whole entry. */
    void drain() throws IOException {
      byte[] b = new byte[8192];
      while (left > 0) {
        if (read(b, 0, b.length) < 0) {
          throw new IllegalArgumentException("entry '" + name + "' is truncated");
        }
      }
    }
  }

  /** A module of known size, decompressed onto the heap. */
  private static final class HeapSink extends OutputStream {
    final byte[] bytes;
    private int at;

    HeapSink(int size) {
      bytes = new byte[size];
    }

    @Override
    public void write(int b) {
      bytes[at++] = (byte) b;
    }

    @Override
    public void write(byte[] b, int off, int len) {
      System.arraycopy(b, off, bytes, at, len); // decompress() never writes past the manifest's size
      at += len;
    }
  }

  /**
   * Sits between the bundle's zstd stream and the tar reader, and finds data after the end of the
   * tar archive. A tar reader stops at the end-of-archive records and skips the rest of the last
   * block unread (Commons Compress reads it as padding), so an archive could carry anything after
   * its end. Everything after the last entry's data (its padding, the two end records, the block
   * padding and whatever follows) must be zero: the importer {@link #arm()}s this stream before
   * each step to the next entry, and {@link #checkEnd()} looks at what that last step and the rest
   * of the stream held. Entry data is read unarmed, so it costs nothing.
   */
  static final class TarStream extends FilterInputStream {
    /** Tar writers pad the archive to their block size (10 KiB for GNU tar); this is plenty. */
    static final long MAX_END_PADDING = 1 << 20;
    private boolean armed;
    private boolean nonZero;

    TarStream(InputStream zstd) {
      super(zstd);
    }

    /** Before the tar reader looks for the next entry: note whether what it reads is all zero. */
    void arm() {
      armed = true;
      nonZero = false;
    }

    /** The tar reader found an entry; its data is not looked at. */
    void disarm() {
      armed = false;
    }

    @Override
    public int read() throws IOException {
      int c = in.read();
      if (armed && c > 0) {
        nonZero = true;
      }
      return c;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int n = in.read(b, off, len);
      if (armed && !nonZero) {
        for (int i = 0; i < n; i++) {
          if (b[off + i] != 0) {
            nonZero = true;
            break;
          }
        }
      }
      return n;
    }

    @Override
    public long skip(long n) throws IOException {
      return ZstdFrameStream.skipByReading(this, n);
    }

    /** After the tar reader met the end of the archive: only zero padding may have followed the last entry. */
    void checkEnd() throws IOException {
      byte[] b = new byte[8192];
      long seen = 0;
      for (int r; !nonZero && (r = read(b, 0, b.length)) >= 0; ) {
        seen += r;
        if (seen > MAX_END_PADDING) {
          nonZero = true;
        }
      }
      if (!armed || nonZero) {
        throw new IllegalArgumentException("it has trailing data after the end of the tar archive");
      }
    }
  }
}
