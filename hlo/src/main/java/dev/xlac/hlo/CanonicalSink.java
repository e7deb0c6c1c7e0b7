package dev.xlac.hlo;

import com.google.protobuf.ByteString;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * The byte stream the fingerprint is computed over. Fixed-width little-endian numbers and
 * length-prefixed byte strings keep the stream unambiguous; writes are buffered so SHA-256 sees
 * large blocks, and large byte strings (constants) go to the digest without a copy.
 */
abstract class CanonicalSink {
  private static final int DIRECT_THRESHOLD = 4096;
  private static final VarHandle INT_LE = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  protected final byte[] buf = new byte[1 << 16];
  protected int pos;

  protected abstract void drain(byte[] b, int off, int len);

  protected abstract void drain(ByteBuffer b);

  final void flush() {
    if (pos > 0) {
      drain(buf, 0, pos);
      pos = 0;
    }
  }

  private void ensure(int n) {
    if (pos + n > buf.length) {
      flush();
    }
  }

  final void u8(int v) {
    ensure(1);
    buf[pos++] = (byte) v;
  }

  final void i32(int v) {
    ensure(4);
    INT_LE.set(buf, pos, v);
    pos += 4;
  }

  final void i64(long v) {
    ensure(8);
    LONG_LE.set(buf, pos, v);
    pos += 8;
  }

  final void bytes(ByteString b) {
    i64(b.size());
    if (b.size() < DIRECT_THRESHOLD) {
      ensure(b.size());
      b.copyTo(buf, pos);
      pos += b.size();
    } else {
      flush();
      for (ByteBuffer part : b.asReadOnlyByteBufferList()) {
        drain(part);
      }
    }
  }

  /** A length-prefixed slice of a buffer (large ones go to the digest without a copy). */
  final void bytes(byte[] b, int off, int len) {
    i64(len);
    if (len < DIRECT_THRESHOLD) {
      ensure(len);
      System.arraycopy(b, off, buf, pos, len);
      pos += len;
    } else {
      flush();
      drain(b, off, len);
    }
  }

  /** A length-prefixed slice of a heap array or a mapped file (large ones go to the digest without a copy). */
  final void bytes(MemorySegment b, int off, int len) {
    i64(len);
    if (len < DIRECT_THRESHOLD) {
      ensure(len);
      MemorySegment.copy(b, ValueLayout.JAVA_BYTE, off, buf, pos, len);
      pos += len;
    } else {
      flush();
      drain(b.asSlice(off, len).asByteBuffer());
    }
  }

  final void bytes(byte[] b) {
    i64(b.length);
    raw(b);
  }

  final void raw(byte[] b) {
    if (b.length < DIRECT_THRESHOLD) {
      ensure(b.length);
      System.arraycopy(b, 0, buf, pos, b.length);
      pos += b.length;
    } else {
      flush();
      drain(b, 0, b.length);
    }
  }

  final void string(String s) {
    bytes(s.getBytes(StandardCharsets.UTF_8));
  }

  /** Feeds SHA-256. */
  static final class Digest extends CanonicalSink {
    private final MessageDigest digest;

    Digest(MessageDigest digest) {
      this.digest = digest;
    }

    @Override
    protected void drain(byte[] b, int off, int len) {
      digest.update(b, off, len);
    }

    @Override
    protected void drain(ByteBuffer b) {
      digest.update(b);
    }

    byte[] finish() {
      flush();
      return digest.digest();
    }
  }

  /** Collects bytes in memory (for small parts that must be sorted before hashing, e.g. map entries). */
  static final class Memory extends CanonicalSink {
    private byte[] out = new byte[64];
    private int size;

    @Override
    protected void drain(byte[] b, int off, int len) {
      if (size + len > out.length) {
        out = Arrays.copyOf(out, Math.max(out.length * 2, size + len));
      }
      System.arraycopy(b, off, out, size, len);
      size += len;
    }

    @Override
    protected void drain(ByteBuffer b) {
      byte[] tmp = new byte[b.remaining()];
      b.get(tmp);
      drain(tmp, 0, tmp.length);
    }

    byte[] toByteArray() {
      flush();
      return Arrays.copyOf(out, size);
    }
  }
}
