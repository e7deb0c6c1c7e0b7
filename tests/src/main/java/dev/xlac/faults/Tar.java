package dev.xlac.faults;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A small POSIX tar reader and writer of the suite's own. The writer puts anything into a header
 * (links, devices, absolute or {@code ..} names, sizes that do not match the data), because the
 * hostile bundles need exactly what a careful library refuses to write.
 */
final class Tar {
  private Tar() {}

  static final char REGULAR = '0';
  static final char HARD_LINK = '1';
  static final char SYMLINK = '2';
  static final char CHAR_DEVICE = '3';
  static final char BLOCK_DEVICE = '4';
  static final char DIRECTORY = '5';
  static final char FIFO = '6';
  static final char GNU_SPARSE = 'S';

  /** One entry as read, or to be written. {@code data} may be shorter than {@code size} only when writing. */
  record Entry(String name, char type, long size, byte[] data, String linkName) {
    static Entry file(String name, byte[] data) {
      return new Entry(name, REGULAR, data.length, data, "");
    }

    Entry withData(byte[] newData) {
      return new Entry(name, type, newData.length, newData, linkName);
    }

    Entry withName(String newName) {
      return new Entry(newName, type, size, data, linkName);
    }
  }

  /** Reads every entry of an uncompressed tar stream into memory (for bundles the suite made or exported). */
  static List<Entry> read(InputStream in) throws IOException {
    List<Entry> entries = new ArrayList<>();
    String paxPath = null;
    Long paxSize = null;
    byte[] header = new byte[512];
    while (true) {
      if (!readBlock(in, header)) {
        throw new EOFException("tar stream ends without its end-of-archive blocks");
      }
      if (allZero(header)) {
        return entries;
      }
      String name = string(header, 0, 100);
      String prefix = string(header, 345, 155);
      if (!prefix.isEmpty()) {
        name = prefix + "/" + name;
      }
      long size = octal(header, 124, 12);
      char type = header[156] == 0 ? REGULAR : (char) header[156];
      String link = string(header, 157, 100);
      byte[] data = in.readNBytes(Math.toIntExact(size));
      if (data.length != size) {
        throw new EOFException("tar entry " + name + " is truncated");
      }
      in.skipNBytes((512 - size % 512) % 512);
      if (type == 'x') {
        for (String record : new String(data, StandardCharsets.UTF_8).split("\n")) {
          int space = record.indexOf(' ');
          int eq = record.indexOf('=');
          if (space < 0 || eq < space) {
            continue;
          }
          String key = record.substring(space + 1, eq);
          String value = record.substring(eq + 1);
          if (key.equals("path")) {
            paxPath = value;
          } else if (key.equals("size")) {
            paxSize = Long.parseLong(value);
          }
        }
        continue;
      }
      if (type == 'g') {
        continue;
      }
      if (paxPath != null) {
        name = paxPath;
      }
      if (paxSize != null && paxSize != size) {
        throw new IOException("pax size of " + name + " is not supported by the suite's reader");
      }
      paxPath = null;
      paxSize = null;
      entries.add(new Entry(name, type, size, data, link));
    }
  }

  /** Writes one entry: a pax header first when the name does not fit ustar's 100 bytes. */
  static void write(OutputStream out, Entry e) throws IOException {
    writeHeader(out, e.name(), e.type(), e.size(), e.linkName());
    out.write(e.data());
    pad(out, e.data().length);
  }

  /** Writes a header only; the caller writes {@code size} bytes of data and then {@link #pad}. */
  static void writeHeader(OutputStream out, String name, char type, long size, String linkName) throws IOException {
    byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
    if (nameBytes.length > 100) {
      byte[] record = paxRecord("path", name);
      out.write(header(Arrays.copyOf(("PaxHeaders.X/" + name).getBytes(StandardCharsets.UTF_8), 100), 'x',
          record.length, ""));
      out.write(record);
      pad(out, record.length);
    }
    out.write(header(nameBytes.length > 100 ? Arrays.copyOf(nameBytes, 100) : nameBytes, type, size, linkName));
  }

  /** Writes an entry preceded by a pax header whose {@code path} says {@code paxPath} (it overrides the ustar name). */
  static void writeWithPaxPath(OutputStream out, String paxPath, Entry e) throws IOException {
    byte[] record = paxRecord("path", paxPath);
    out.write(header(Arrays.copyOf("PaxHeaders.X/entry".getBytes(StandardCharsets.UTF_8), 100), 'x', record.length,
        ""));
    out.write(record);
    pad(out, record.length);
    out.write(header(e.name().getBytes(StandardCharsets.UTF_8), e.type(), e.size(), e.linkName()));
    out.write(e.data());
    pad(out, e.data().length);
  }

  static void pad(OutputStream out, long written) throws IOException {
    int pad = (int) ((512 - written % 512) % 512);
    out.write(new byte[pad]);
  }

  /** The end of an archive: two zero blocks. */
  static void end(OutputStream out) throws IOException {
    out.write(new byte[1024]);
  }

  private static byte[] paxRecord(String key, String value) {
    String body = " " + key + "=" + value + "\n";
    int len = body.getBytes(StandardCharsets.UTF_8).length;
    int total = len + String.valueOf(len).length();
    if (String.valueOf(total).length() != String.valueOf(len).length()) {
      total++;
    }
    return (total + body).getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] header(byte[] name, char type, long size, String linkName) {
    byte[] h = new byte[512];
    put(h, 0, 100, name);
    putOctal(h, 100, 8, type == DIRECTORY ? 0755 : 0644);
    putOctal(h, 108, 8, 0);
    putOctal(h, 116, 8, 0);
    putOctal(h, 124, 12, size);
    putOctal(h, 136, 12, 1_700_000_000L);
    h[156] = (byte) type;
    put(h, 157, 100, linkName.getBytes(StandardCharsets.UTF_8));
    put(h, 257, 6, "ustar\0".getBytes(StandardCharsets.US_ASCII));
    put(h, 263, 2, "00".getBytes(StandardCharsets.US_ASCII));
    Arrays.fill(h, 148, 156, (byte) ' ');
    long sum = 0;
    for (byte b : h) {
      sum += b & 0xff;
    }
    byte[] chk = String.format("%06o\0 ", sum).getBytes(StandardCharsets.US_ASCII);
    System.arraycopy(chk, 0, h, 148, 8);
    return h;
  }

  private static void put(byte[] h, int off, int len, byte[] value) {
    System.arraycopy(value, 0, h, off, Math.min(len, value.length));
  }

  private static void putOctal(byte[] h, int off, int len, long value) {
    String s = Long.toOctalString(value);
    String padded = "0".repeat(Math.max(0, len - 1 - s.length())) + s;
    put(h, off, len - 1, padded.getBytes(StandardCharsets.US_ASCII));
  }

  private static boolean readBlock(InputStream in, byte[] block) throws IOException {
    int n = in.readNBytes(block, 0, 512);
    if (n == 0) {
      return false;
    }
    if (n < 512) {
      throw new EOFException("tar stream ends inside a header");
    }
    return true;
  }

  private static boolean allZero(byte[] b) {
    for (byte x : b) {
      if (x != 0) {
        return false;
      }
    }
    return true;
  }

  private static String string(byte[] h, int off, int len) {
    int end = off;
    while (end < off + len && h[end] != 0) {
      end++;
    }
    return new String(h, off, end - off, StandardCharsets.UTF_8);
  }

  private static long octal(byte[] h, int off, int len) throws IOException {
    if ((h[off] & 0x80) != 0) { // base-256
      long v = 0;
      for (int i = off + 1; i < off + len; i++) {
        v = (v << 8) | (h[i] & 0xff);
      }
      return v;
    }
    String s = new String(h, off, len, StandardCharsets.US_ASCII).replace("\0", "").trim();
    try {
      return s.isEmpty() ? 0 : Long.parseLong(s, 8);
    } catch (NumberFormatException e) {
      throw new IOException("bad tar number: " + s);
    }
  }

  /** Serializes entries to an uncompressed tar, end blocks included. */
  static byte[] toBytes(List<Entry> entries) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Entry e : entries) {
      write(out, e);
    }
    end(out);
    return out.toByteArray();
  }
}
