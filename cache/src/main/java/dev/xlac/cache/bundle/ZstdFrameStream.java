package dev.xlac.cache.bundle;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * Passes exactly one zstd frame through, then reports the end of the stream, so whatever follows
 * the frame is left unread for {@link #trailingData()} to find. It follows the frame's structure
 * (RFC 8878: magic number, frame header, block headers, optional content checksum) without
 * decompressing anything; the decompressor reading from it checks the content.
 *
 * <p>Why: a zstd decompressor carries on into a next frame, and a tar reader stops at the end of
 * the archive, so neither notices bytes appended to a bundle or to one of its compressed entries.
 * Bundles and their entries are each one frame; anything after it is refused.
 */
final class ZstdFrameStream extends FilterInputStream {
  private static final int MAGIC = 0xFD2FB528;

  private enum State { MAGIC, DESCRIPTOR, HEADER, BLOCK_HEADER, BLOCK, CHECKSUM, END }

  private State state = State.MAGIC;
  /** Bytes left in the current frame header, block or checksum. */
  private long left;
  /** The field being assembled (magic number, block header), little-endian. */
  private int field;
  private int fieldBytes;
  private boolean checksum;
  private boolean lastBlock;

  ZstdFrameStream(InputStream in) {
    super(in);
  }

  /** True once the whole frame went through. */
  boolean ended() {
    return state == State.END;
  }

  /** After the frame: whether the underlying stream holds anything more (it is read to find out). */
  boolean trailingData() throws IOException {
    return in.read() >= 0;
  }

  @Override
  public int read() throws IOException {
    byte[] one = new byte[1];
    int n = read(one, 0, 1);
    return n <= 0 ? -1 : one[0] & 0xff;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    if (len == 0) {
      return 0;
    }
    int done = 0;
    while (done < len && state != State.END) {
      if (state == State.BLOCK) {
        int n = in.read(b, off + done, (int) Math.min(len - done, left));
        if (n < 0) {
          break;
        }
        done += n;
        left -= n;
        if (left > 0) {
          break; // a short read: hand over what there is
        }
        endOfBlock();
        continue;
      }
      int c = in.read(); // header fields are a few bytes per block of up to 128 KiB
      if (c < 0) {
        break;
      }
      b[off + done++] = (byte) c;
      header(c);
    }
    return done == 0 ? -1 : done;
  }

  @Override
  public long skip(long n) throws IOException {
    return skipByReading(this, n);
  }

  /** Skips by reading through {@code in}'s own {@code read}, so that a stream that checks what it reads checks these bytes too. */
  static long skipByReading(java.io.InputStream in, long n) throws IOException {
    byte[] buffer = new byte[(int) Math.min(n, 8192)];
    long skipped = 0;
    while (skipped < n) {
      int r = in.read(buffer, 0, (int) Math.min(buffer.length, n - skipped));
      if (r < 0) {
        break;
      }
      skipped += r;
    }
    return skipped;
  }

  /** Never promises bytes: the frame may end sooner than the underlying stream. */
  @Override
  public int available() {
    return 0;
  }

  @Override
  public boolean markSupported() {
    return false;
  }

  /** One byte of a header field (everything but block content). */
  private void header(int c) throws IOException {
    switch (state) {
      case MAGIC -> {
        field |= c << (8 * fieldBytes++);
        if (fieldBytes == 4) {
          if (field != MAGIC) {
            throw new IOException("not zstd-compressed data");
          }
          state = State.DESCRIPTOR;
        }
      }
      case DESCRIPTOR -> {
        int fcsFlag = c >>> 6;
        boolean singleSegment = (c & 0x20) != 0;
        if ((c & 0x08) != 0) {
          throw new IOException("corrupt zstd frame header (reserved bit set)");
        }
        checksum = (c & 0x04) != 0;
        int dictionary = new int[] {0, 1, 2, 4}[c & 3];
        int contentSize = switch (fcsFlag) {
          case 0 -> singleSegment ? 1 : 0;
          case 1 -> 2;
          case 2 -> 4;
          default -> 8;
        };
        left = (singleSegment ? 0 : 1) + dictionary + contentSize;
        state = State.HEADER;
        if (left == 0) {
          startBlockHeader();
        }
      }
      case HEADER -> {
        if (--left == 0) {
          startBlockHeader();
        }
      }
      case BLOCK_HEADER -> {
        field |= c << (8 * fieldBytes++);
        if (fieldBytes == 3) {
          lastBlock = (field & 1) != 0;
          int type = (field >>> 1) & 3;
          int size = field >>> 3;
          left = switch (type) {
            case 0, 2 -> size; // raw, compressed
            case 1 -> 1; // run-length: one byte repeated
            default -> throw new IOException("corrupt zstd block (reserved block type)");
          };
          state = State.BLOCK;
          if (left == 0) {
            endOfBlock();
          }
        }
      }
      case CHECKSUM -> {
        if (--left == 0) {
          state = State.END;
        }
      }
      default -> throw new IllegalStateException(state.name());
    }
  }

  private void startBlockHeader() {
    state = State.BLOCK_HEADER;
    field = 0;
    fieldBytes = 0;
  }

  private void endOfBlock() {
    if (!lastBlock) {
      startBlockHeader();
    } else if (checksum) {
      state = State.CHECKSUM;
      left = 4;
    } else {
      state = State.END;
    }
  }
}
