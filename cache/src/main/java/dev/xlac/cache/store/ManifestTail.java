package dev.xlac.cache.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Whether a database's MANIFEST ends in the middle of a record. RocksDB takes a MANIFEST cut short
 * for one whose writer died while appending: it opens the database as of the last whole record,
 * silently, and a writer then deletes every table and blob file that later records added, as
 * obsolete. A process killed with SIGKILL cannot leave that (each record reaches the file in one
 * write), so a cut record means the file was truncated or lost its end: damage, for {@code verify
 * --repair} to rebuild from the files themselves.
 *
 * <p>The MANIFEST is a RocksDB log file: 32 KiB blocks of records, each a 7-byte header (masked
 * CRC32C, u16 little-endian length, u8 type) and its payload; a record that does not fit a block is
 * split into first, middle and last fragments; fewer than 7 bytes left in a block are zero padding.
 * Recyclable record types have 4 more header bytes (their log number). This only walks the headers;
 * RocksDB checks the checksums itself.
 */
final class ManifestTail {
  private static final int BLOCK = 32768;
  private static final int HEADER = 7;
  private static final int RECYCLABLE_HEADER = 11;

  private ManifestTail() {}

  /** Why the MANIFEST that {@code dbDir/CURRENT} names is cut short, or null when it is whole (or there is none to read). */
  static String problem(Path dbDir) {
    try {
      Path current = dbDir.resolve("CURRENT");
      if (!Files.isRegularFile(current)) {
        return null;
      }
      String name = Files.readString(current, StandardCharsets.US_ASCII).strip();
      if (!name.matches("MANIFEST-[0-9]+")) {
        return null; // RocksDB says what is wrong with CURRENT
      }
      Path manifest = dbDir.resolve(name);
      return Files.isRegularFile(manifest) ? cut(manifest) : null;
    } catch (IOException e) {
      return null; // RocksDB's open reports it
    }
  }

  private static String cut(Path manifest) throws IOException {
    try (FileChannel ch = FileChannel.open(manifest, StandardOpenOption.READ)) {
      long size = ch.size();
      ByteBuffer block = ByteBuffer.allocate(BLOCK).order(ByteOrder.LITTLE_ENDIAN);
      boolean inFragments = false;
      for (long base = 0; base < size; base += BLOCK) {
        block.clear();
        block.limit((int) Math.min(BLOCK, size - base));
        while (block.hasRemaining()) {
          if (ch.read(block, base + block.position()) < 0) {
            break;
          }
        }
        int n = block.position();
        int at = 0;
        while (at < n) {
          if (n - at < HEADER) {
            if (!zeros(block, at, n)) {
              return name(manifest) + " ends inside a record header (it is truncated)";
            }
            break; // the block's zero padding
          }
          int length = Short.toUnsignedInt(block.getShort(at + 4));
          int type = block.get(at + 6) & 0xff;
          if (type == 0 && length == 0) {
            if (!zeros(block, at, n)) {
              return name(manifest) + " has a damaged record header";
            }
            break; // preallocated space
          }
          int header = type >= 5 && type <= 8 || type == 11 || type == 34 ? RECYCLABLE_HEADER : HEADER;
          if (at + header + length > n) {
            return base + at + header + length > size && base + n == size
                ? name(manifest) + " ends inside a record (it is truncated)"
                : name(manifest) + " has a record that runs past its block (it is damaged)";
          }
          switch (type) {
            case 1, 5 -> inFragments = false;
            case 2, 6 -> inFragments = true;
            case 3, 7 -> {
              // a middle fragment: still inside a record
            }
            case 4, 8 -> inFragments = false;
            default -> {
              // metadata records (compression, timestamp sizes, WAL information): whole
            }
          }
          at += header + length;
        }
      }
      return inFragments ? name(manifest) + " ends inside a record (it is truncated)" : null;
    }
  }

  private static boolean zeros(ByteBuffer b, int from, int to) {
    for (int i = from; i < to; i++) {
      if (b.get(i) != 0) {
        return false;
      }
    }
    return true;
  }

  private static String name(Path manifest) {
    return "its " + manifest.getFileName();
  }
}
