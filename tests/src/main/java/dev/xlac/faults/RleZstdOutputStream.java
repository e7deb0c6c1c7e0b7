package dev.xlac.faults;

import java.io.IOException;
import java.io.OutputStream;

/**
 * Writes one zstd frame (RFC 8878) of raw and RLE blocks only, without compressing: runs of zeros
 * written with {@link #writeZeros} cost 4 bytes per 128 KiB, so a bomb of 2e9 bytes is about 60 KB
 * and takes no time to make. Any zstd decoder reads it. No content size, no checksum.
 */
final class RleZstdOutputStream extends OutputStream {
  private static final int BLOCK = 128 << 10;

  private final OutputStream out;
  private final byte[] buffer = new byte[BLOCK];
  private int buffered;
  private boolean closed;

  RleZstdOutputStream(OutputStream out) throws IOException {
    this.out = out;
    out.write(new byte[] {0x28, (byte) 0xB5, 0x2F, (byte) 0xFD}); // magic number, little-endian
    out.write(0x00); // frame header descriptor: no content size, not single-segment, no checksum, no dictionary
    out.write(7 << 3); // window descriptor: 2^(10+7) = 128 KiB, the largest block
  }

  @Override
  public void write(int b) throws IOException {
    buffer[buffered++] = (byte) b;
    if (buffered == BLOCK) {
      flushRaw(false);
    }
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    while (len > 0) {
      int n = Math.min(len, BLOCK - buffered);
      System.arraycopy(b, off, buffer, buffered, n);
      buffered += n;
      off += n;
      len -= n;
      if (buffered == BLOCK) {
        flushRaw(false);
      }
    }
  }

  /** {@code n} zero bytes, as RLE blocks. */
  void writeZeros(long n) throws IOException {
    flushRaw(false);
    for (long left = n; left > 0; ) {
      int size = (int) Math.min(BLOCK, left);
      header(false, 1, size);
      out.write(0);
      left -= size;
    }
  }

  private void flushRaw(boolean last) throws IOException {
    if (buffered == 0 && !last) {
      return;
    }
    header(last, 0, buffered);
    out.write(buffer, 0, buffered);
    buffered = 0;
  }

  private void header(boolean last, int type, int size) throws IOException {
    int h = (last ? 1 : 0) | (type << 1) | (size << 3);
    out.write(h & 0xff);
    out.write((h >>> 8) & 0xff);
    out.write((h >>> 16) & 0xff);
  }

  @Override
  public void close() throws IOException {
    if (!closed) {
      closed = true;
      flushRaw(true);
      out.close();
    }
  }
}
