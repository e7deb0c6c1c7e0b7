package dev.xlac.cache.repair;

import dev.xlac.cache.store.Keys;
import dev.xlac.cache.store.Store;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Our own reader of RocksDB's blob files ({@code NNNNNN.blob}), for salvaging values that RocksDB
 * itself can no longer reach: a blob file that is truncated (RocksDB reads its footer before any
 * value, so it gives up on all of them), or that a database rebuilt by RocksDB's RepairDB no
 * longer knows (RepairDB registers table files only). Written from the format's description in
 * RocksDB's {@code db/blob/blob_log_format.h}; no RocksDB code is used.
 *
 * <p>The format, all integers little-endian, every checksum a masked CRC32C
 * ({@link #masked}):
 * <pre>
 * header  (30 bytes)  u32 magic 0x00248F37, u32 version (1), u32 column family id, u8 flags (1: TTL),
 *                     u8 compression (0: none), u64 u64 expiration range
 * record  (32 bytes)  u64 key length, u64 value length, u64 expiration,
 *                     u32 CRC of the 24 bytes before it, u32 CRC of key ‖ value; then the key, then the value
 * footer  (32 bytes)  u32 magic, u64 record count, u64 u64 expiration range, u32 CRC of the 28 bytes before it
 * </pre>
 * A file is sealed with its footer when RocksDB closes it. A record whose header checksum fails
 * cannot say where the next one starts; the scan then looks for the next offset that holds a
 * valid record header (its checksum and plausible lengths), so one damaged header costs only the
 * records up to the next good one.
 */
final class BlobFiles {
  static final int MAGIC = 0x00248F37;
  static final int HEADER_BYTES = 30;
  static final int RECORD_HEADER_BYTES = 32;
  static final int FOOTER_BYTES = 32;
  /** Keys of ours are at most 68 bytes; anything far longer is not a record header. */
  private static final long MAX_KEY_BYTES = 4096;
  private static final int MASK_DELTA = 0xa282ead8;
  private static final int IO_BYTES = 1 << 20;

  /** What a scan found in one file. */
  record FileScan(Path file, long number, int columnFamilyId, boolean readable, boolean sealed, long size,
      List<Location> records, int damagedRecords, String problem) {
    /** RocksDB reads a value only from a sealed file whose header and footer are intact. */
    boolean rocksDbCanRead() {
      return readable && sealed;
    }
  }

  /**
   * One record: its key, where its value starts and how long it is, and the stored CRC of
   * key ‖ value (checked when the value is read, {@link #stream}).
   */
  record Location(Path file, long fileNumber, long keyOffset, byte[] key, long valueSize, int blobCrc) {
    long valueOffset() {
      return keyOffset + key.length;
    }
  }

  private final Map<IndexKey, List<Location>> index = new HashMap<>();
  private final List<FileScan> scans = new ArrayList<>();

  private record IndexKey(int columnFamilyId, ByteBuffer key) {}

  /** Scans every {@code *.blob} file in {@code dbDir} and indexes its records by column family and key. */
  static BlobFiles scanDirectory(Path dbDir) throws IOException {
    BlobFiles b = new BlobFiles();
    List<Path> files;
    try (var s = Files.list(dbDir)) {
      files = s.filter(p -> p.getFileName().toString().endsWith(".blob")).sorted().toList();
    } catch (NoSuchFileException e) {
      files = List.of();
    }
    for (Path f : files) {
      b.add(scan(f));
    }
    return b;
  }

  private void add(FileScan s) {
    scans.add(s);
    if (!s.readable()) {
      return;
    }
    for (Location l : s.records()) {
      index.computeIfAbsent(new IndexKey(s.columnFamilyId(), ByteBuffer.wrap(l.key())), k -> new ArrayList<>()).add(l);
    }
  }

  List<FileScan> files() {
    return scans;
  }

  /** Every record of {@code key} in the family with this id, newest file first (a later file holds a later copy). */
  List<Location> find(int columnFamilyId, byte[] key) {
    List<Location> l = index.get(new IndexKey(columnFamilyId, ByteBuffer.wrap(key)));
    if (l == null) {
      return List.of();
    }
    List<Location> sorted = new ArrayList<>(l);
    sorted.sort(Comparator.comparingLong(Location::fileNumber).reversed());
    return sorted;
  }

  /** The keys of every record in the family with this id (each once). */
  List<byte[]> keys(int columnFamilyId) {
    List<byte[]> out = new ArrayList<>();
    for (IndexKey k : index.keySet()) {
      if (k.columnFamilyId() == columnFamilyId) {
        out.add(k.key().array());
      }
    }
    return out;
  }

  /** The file number in a name such as {@code 000123.blob}; -1 when it is not one. */
  static long fileNumber(Path file) {
    String n = file.getFileName().toString();
    int dot = n.indexOf('.');
    try {
      return Long.parseLong(dot < 0 ? n : n.substring(0, dot));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /**
   * Checks only what RocksDB checks before it reads any value of the file: its header, and a valid
   * footer at its end. The result lists no records.
   */
  static FileScan checkEnds(Path file) throws IOException {
    long number = fileNumber(file);
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = ch.size();
      ByteBuffer h = read(ch, 0, HEADER_BYTES);
      if (!isHeader(h)) {
        return new FileScan(file, number, -1, false, false, size, List.of(), 0,
            h == null ? "it is shorter than a blob file header (truncated)" : "its header is damaged");
      }
      ByteBuffer f = size >= HEADER_BYTES + FOOTER_BYTES ? read(ch, size - FOOTER_BYTES, FOOTER_BYTES) : null;
      boolean sealed = f != null && isFooter(f);
      return new FileScan(file, number, h.getInt(8), true, sealed, size, List.of(), 0,
          sealed ? null : "it has no valid footer (it is truncated, or its end is damaged)");
    }
  }

  /** A blob file header of the one version xlac reads: the magic number and version 1; false for null. */
  private static boolean isHeader(ByteBuffer h) {
    return h != null && h.getInt(0) == MAGIC && h.getInt(4) == 1;
  }

  /** Reads one blob file's structure: its header, every record header it can find, its footer. */
  static FileScan scan(Path file) throws IOException {
    long number = fileNumber(file);
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = ch.size();
      ByteBuffer h = read(ch, 0, HEADER_BYTES);
      if (!isHeader(h)) {
        return new FileScan(file, number, -1, false, false, size, List.of(), 0,
            h == null ? "shorter than a blob file header" : "no blob file header");
      }
      int cf = h.getInt(8);
      int compression = h.get(13) & 0xff;
      if (compression != 0) {
        return scanProblem(file, number, cf, size, "compressed with RocksDB compression type " + compression,
            "xlac never writes those");
      }
      List<Location> records = new ArrayList<>();
      int damaged = 0;
      boolean sealed = false;
      long pos = HEADER_BYTES;
      while (pos + RECORD_HEADER_BYTES <= size) {
        ByteBuffer r = read(ch, pos, RECORD_HEADER_BYTES);
        if (pos + RECORD_HEADER_BYTES == size && isFooter(r)) {
          sealed = true;
          break;
        }
        long keyLength = r.getLong(0);
        long valueLength = r.getLong(8);
        if (validRecordHeader(r, pos, size)) {
          ByteBuffer key = read(ch, pos + RECORD_HEADER_BYTES, (int) keyLength);
          records.add(new Location(file, number, pos + RECORD_HEADER_BYTES, key.array(), valueLength, r.getInt(28)));
          pos += RECORD_HEADER_BYTES + keyLength + valueLength;
          continue;
        }
        // A damaged record header, or a record cut short by a truncation.
        damaged++;
        long next = resync(ch, pos + 1, size);
        if (next < 0) {
          break;
        }
        pos = next;
      }
      return new FileScan(file, number, cf, true, sealed, size, List.copyOf(records), damaged,
          sealed ? null : "no footer (the file is truncated)");
    }
  }

  private static FileScan scanProblem(Path file, long number, int cf, long size, String problem, String why) {
    return new FileScan(file, number, cf, false, false, size, List.of(), 0, problem + " (" + why + ")");
  }

  private static boolean isFooter(ByteBuffer b) {
    return b.getInt(0) == MAGIC && b.getInt(28) == masked(crc(b, 0, 28));
  }

  private static boolean validRecordHeader(ByteBuffer r, long pos, long size) {
    long keyLength = r.getLong(0);
    long valueLength = r.getLong(8);
    long end = pos + RECORD_HEADER_BYTES;
    return r.getInt(24) == masked(crc(r, 0, 24)) && keyLength > 0 && keyLength <= MAX_KEY_BYTES && valueLength >= 0
        && valueLength <= size && end + keyLength + valueLength <= size;
  }

  /** The next offset from {@code from} that holds a valid record header, or -1. */
  private static long resync(FileChannel ch, long from, long size) throws IOException {
    ByteBuffer window = ByteBuffer.allocate(IO_BYTES + RECORD_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    for (long base = from; base + RECORD_HEADER_BYTES <= size; base += IO_BYTES) {
      window.clear();
      int n = (int) Math.min(window.capacity(), size - base);
      window.limit(n);
      readFully(ch, base, window);
      for (int i = 0; i + RECORD_HEADER_BYTES <= n && i < IO_BYTES; i++) {
        ByteBuffer r = window.duplicate().order(ByteOrder.LITTLE_ENDIAN).position(i).limit(i + RECORD_HEADER_BYTES)
            .slice().order(ByteOrder.LITTLE_ENDIAN);
        if (validRecordHeader(r, base + i, size)) {
          return base + i;
        }
      }
    }
    return -1;
  }

  /** Receives a value in pieces. */
  @FunctionalInterface
  interface Sink {
    void accept(byte[] piece, int off, int len) throws IOException;
  }

  /**
   * Streams the value of {@code l} into {@code sink} and checks the record's CRC of key ‖ value
   * (known only at the end: a caller discards what it received unless this returns true). The key
   * is read again and compared, so a file changed since the scan is caught too.
   */
  static boolean stream(Location l, Sink sink) throws IOException {
    try (FileChannel ch = FileChannel.open(l.file(), StandardOpenOption.READ)) {
      if (l.valueOffset() + l.valueSize() > ch.size()) {
        return false;
      }
      CRC32C crc = new CRC32C();
      ByteBuffer key = read(ch, l.keyOffset(), l.key().length);
      if (!Arrays.equals(key.array(), l.key())) {
        return false;
      }
      crc.update(key.array());
      ByteBuffer buf = ByteBuffer.allocate((int) Math.min(IO_BYTES, Math.max(1, l.valueSize())));
      long pos = l.valueOffset();
      long left = l.valueSize();
      while (left > 0) {
        buf.clear().limit((int) Math.min(buf.capacity(), left));
        readFully(ch, pos, buf);
        crc.update(buf.array(), 0, buf.limit());
        sink.accept(buf.array(), 0, buf.limit());
        pos += buf.limit();
        left -= buf.limit();
      }
      return masked((int) crc.getValue()) == l.blobCrc();
    }
  }

  /** The value of {@code l} as an array when its CRC matches, else null. */
  static byte[] read(Location l) throws IOException {
    if (l.valueSize() > Store.MAX_ARRAY_BYTES) {
      return null;
    }
    byte[] out = new byte[(int) l.valueSize()];
    int[] at = {0};
    boolean ok = stream(l, (piece, off, len) -> {
      System.arraycopy(piece, off, out, at[0], len);
      at[0] += len;
    });
    return ok ? out : null;
  }

  /** RocksDB stores CRC32C values masked (rotated right by 15 bits, plus a constant), so that a CRC of data holding CRCs stays strong. */
  static int masked(int crc) {
    return ((crc >>> 15) | (crc << 17)) + MASK_DELTA;
  }

  private static int crc(ByteBuffer b, int from, int length) {
    CRC32C c = new CRC32C();
    c.update(b.duplicate().position(from).limit(from + length));
    return (int) c.getValue();
  }

  /** {@code length} bytes at {@code pos}, little-endian; null when the file ends first. */
  private static ByteBuffer read(FileChannel ch, long pos, int length) throws IOException {
    if (pos + length > ch.size()) {
      return null;
    }
    ByteBuffer b = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
    readFully(ch, pos, b);
    return b.flip().order(ByteOrder.LITTLE_ENDIAN);
  }

  private static void readFully(FileChannel ch, long pos, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      int n = ch.read(b, pos);
      if (n < 0) {
        throw new IOException("unexpected end of file");
      }
      pos += n;
    }
  }
}
