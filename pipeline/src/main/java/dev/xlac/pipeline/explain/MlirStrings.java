package dev.xlac.pipeline.explain;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The string table of an MLIR bytecode file (a StableHLO portable artifact, what JAX sends a plugin as format
 * {@code mlir}): the names the module uses (its own name, {@code jit_step}, among them). The format (MLIR's
 * {@code BytecodeWriter}): the magic {@code ML\xefR}, a version and a NUL-terminated producer, then sections, each
 * an id byte (its high bit: aligned), a length and, when aligned, an alignment; section 0 holds the strings: their
 * count, their sizes in reverse order, then their bytes, each NUL-terminated. Numbers are MLIR's prefix varints
 * (the trailing zero bits of the first byte count the bytes that follow).
 */
final class MlirStrings {
  private static final byte[] MAGIC = {'M', 'L', (byte) 0xef, 'R'};

  private MlirStrings() {}

  /** The strings, in the table's order; an IllegalArgumentException when the bytes are not MLIR bytecode. */
  static List<String> of(byte[] b) {
    if (b.length < MAGIC.length || b[0] != MAGIC[0] || b[1] != MAGIC[1] || b[2] != MAGIC[2] || b[3] != MAGIC[3]) {
      throw new IllegalArgumentException("not MLIR bytecode");
    }
    int[] at = {MAGIC.length};
    varint(b, at); // the bytecode version
    while (at[0] < b.length && b[at[0]] != 0) {
      at[0]++;
    }
    at[0]++; // the producer's NUL
    while (at[0] < b.length) {
      int idAndAligned = b[at[0]++] & 0xff;
      long length = varint(b, at);
      if ((idAndAligned & 0x80) != 0) {
        long alignment = varint(b, at);
        if (alignment <= 0 || alignment > 256) {
          throw new IllegalArgumentException("bad section alignment");
        }
        while (at[0] % alignment != 0) {
          at[0]++;
        }
      }
      if (length < 0 || length > b.length - at[0]) {
        throw new IllegalArgumentException("a section runs past the end");
      }
      int end = at[0] + (int) length;
      if ((idAndAligned & 0x7f) == 0) {
        return strings(b, at, end);
      }
      at[0] = end;
    }
    return List.of();
  }

  private static List<String> strings(byte[] b, int[] at, int end) {
    long count = varint(b, at);
    if (count < 0 || count > end - at[0]) {
      throw new IllegalArgumentException("bad string count");
    }
    long[] sizes = new long[(int) count];
    for (int i = sizes.length - 1; i >= 0; i--) {
      sizes[i] = varint(b, at);
    }
    List<String> out = new ArrayList<>(sizes.length);
    for (long size : sizes) {
      if (size < 1 || size > end - at[0]) {
        throw new IllegalArgumentException("a string runs past its section");
      }
      out.add(new String(b, at[0], (int) size - 1, StandardCharsets.UTF_8)); // without its NUL
      at[0] += (int) size;
    }
    return out;
  }

  /** MLIR's prefix varint at {@code at[0]}, which moves past it. */
  private static long varint(byte[] b, int[] at) {
    if (at[0] >= b.length) {
      throw new IllegalArgumentException("truncated");
    }
    int first = b[at[0]] & 0xff;
    if (first == 0) { // 8 bytes follow
      if (b.length - at[0] < 9) {
        throw new IllegalArgumentException("truncated");
      }
      long v = 0;
      for (int i = 8; i >= 1; i--) {
        v = v << 8 | (b[at[0] + i] & 0xff);
      }
      at[0] += 9;
      return v;
    }
    int extra = Integer.numberOfTrailingZeros(first);
    if (b.length - at[0] < extra + 1) {
      throw new IllegalArgumentException("truncated");
    }
    long v = 0;
    for (int i = extra; i >= 0; i--) {
      v = v << 8 | (b[at[0] + i] & 0xff);
    }
    at[0] += extra + 1;
    return v >>> (extra + 1);
  }
}
