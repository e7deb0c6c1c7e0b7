package dev.xlac.hlo;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A position in a protobuf wire buffer, with the reads that the wire-level readers need. Every
 * read is bounds-checked against the given limit, and malformed data fails the way protobuf-java
 * fails on it (same exception messages), so both parsers reject the same files for the same reasons.
 */
final class WireCursor {
  static final String TRUNCATED = "While parsing a protocol message, the input ended unexpectedly in the middle of a "
      + "field.  This could mean either that the input has been truncated or that an embedded message misreported "
      + "its own length.";

  private static final ValueLayout.OfByte BYTE = ValueLayout.JAVA_BYTE;
  private static final ValueLayout.OfInt INT_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /** The bytes: a heap array, or a file mapped read-only (then a read may fail if the file shrinks meanwhile). */
  final MemorySegment buf;
  /**
   * The array behind {@link #buf} when it is a whole heap array, else null. Reads go to it
   * directly: a segment read is as fast once compiled, but many times slower in the interpreter,
   * where the short reads of small modules run.
   */
  final byte[] heap;
  int pos;

  WireCursor(MemorySegment buf) {
    this.buf = buf;
    byte[] array = buf.isNative() ? null : (byte[]) buf.heapBase().filter(byte[].class::isInstance).orElse(null);
    this.heap = array != null && array.length == buf.byteSize() && buf.address() == 0 ? array : null;
  }

  byte at(int p) {
    byte[] h = heap;
    return h != null ? h[p] : buf.get(BYTE, p);
  }

  static InvalidProtocolBufferException truncated() {
    return new InvalidProtocolBufferException(TRUNCATED);
  }

  static InvalidProtocolBufferException negativeSize() {
    return new InvalidProtocolBufferException(
        "CodedInputStream encountered an embedded string or message which claimed to have negative size.");
  }

  static InvalidProtocolBufferException tooLarge() {
    return new InvalidProtocolBufferException("Protocol message was too large.  May be malicious.");
  }

  static InvalidProtocolBufferException invalidTag() {
    return new InvalidProtocolBufferException("Protocol message contained an invalid tag (zero).");
  }

  static InvalidProtocolBufferException invalidWireType() {
    return new InvalidProtocolBufferException("Protocol message tag had invalid wire type.");
  }

  static InvalidProtocolBufferException invalidEndTag() {
    return new InvalidProtocolBufferException("Protocol message end-group tag did not match expected tag.");
  }

  static InvalidProtocolBufferException tooDeep() {
    return new InvalidProtocolBufferException("Protocol message had too many levels of nesting.  May be malicious.");
  }

  static InvalidProtocolBufferException invalidUtf8() {
    return new InvalidProtocolBufferException("Protocol message had invalid UTF-8.");
  }

  /** A 64-bit varint: at most 10 bytes. */
  long varint64(int limit) throws InvalidProtocolBufferException {
    int p = pos;
    if (p < limit) {
      byte b = at(p);
      if (b >= 0) {
        pos = p + 1;
        return b;
      }
    }
    int start = p;
    long result = 0;
    for (int shift = 0; shift < 63; shift += 7) {
      if (p >= limit) {
        throw truncated();
      }
      byte b = at(p++);
      result |= (long) (b & 0x7F) << shift;
      if (b >= 0) {
        pos = p;
        return result;
      }
    }
    if (p >= limit) {
      throw truncated();
    }
    byte last = at(p++);
    if (last < 0) {
      return likeProtobuf(start, limit, true);
    }
    pos = p;
    return result | (long) last << 63;
  }

  /** A 32-bit varint (tags, lengths, int32, enums): at most 10 bytes, the low 32 bits count. */
  int varint32(int limit) throws InvalidProtocolBufferException {
    int p = pos;
    if (p < limit) {
      byte b = at(p);
      if (b >= 0) {
        pos = p + 1;
        return b;
      }
    }
    long result = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p >= limit) {
        throw truncated();
      }
      byte b = at(p++);
      result |= (long) (b & 0x7F) << shift;
      if (b >= 0) {
        pos = p;
        return (int) result;
      }
    }
    return (int) likeProtobuf(pos, limit, false);
  }

  /**
   * A varint whose tenth byte has its continuation bit set, which only hostile data has:
   * protobuf-java accepts some of these and rejects others, depending on its fast path, so
   * its verdict is taken as it is rather than imitated.
   */
  private long likeProtobuf(int start, int limit, boolean wide) throws InvalidProtocolBufferException {
    CodedInputStream in = CodedInputStream.newInstance(buf.asSlice(start, limit - start).toArray(BYTE));
    try {
      long v = wide ? in.readRawVarint64() : in.readRawVarint32();
      pos = start + in.getTotalBytesRead();
      return v;
    } catch (InvalidProtocolBufferException e) {
      throw e;
    } catch (IOException e) {
      throw new InvalidProtocolBufferException(e);
    }
  }

  /** The next tag, or 0 at the limit. */
  int tag(int limit) throws InvalidProtocolBufferException {
    if (pos >= limit) {
      return 0;
    }
    int tag = varint32(limit);
    if (tag >>> 3 == 0) {
      throw invalidTag();
    }
    return tag;
  }

  /** The length of a string or bytes field; the cursor stays at the first payload byte. */
  int bytesLength(int limit) throws InvalidProtocolBufferException {
    int len = varint32(limit);
    if (len < 0) {
      throw negativeSize();
    }
    if (len > limit - pos) {
      throw truncated();
    }
    return len;
  }

  /** The length of an embedded message or packed field (protobuf-java pushes a limit for these). */
  int messageLength(int limit) throws InvalidProtocolBufferException {
    int len = varint32(limit);
    if (len < 0) {
      throw negativeSize();
    }
    if (pos + len < 0) {
      throw tooLarge();
    }
    if (len > limit - pos) {
      throw truncated();
    }
    return len;
  }

  void skip(int n, int limit) throws InvalidProtocolBufferException {
    if (n > limit - pos) {
      throw truncated();
    }
    pos += n;
  }

  int int32At(int p) {
    byte[] h = heap;
    if (h != null) {
      return (h[p] & 0xFF) | (h[p + 1] & 0xFF) << 8 | (h[p + 2] & 0xFF) << 16 | (h[p + 3] & 0xFF) << 24;
    }
    return buf.get(INT_LE, p);
  }

  long int64At(int p) {
    if (heap != null) {
      return (int32At(p) & 0xFFFFFFFFL) | (long) int32At(p + 4) << 32;
    }
    return buf.get(LONG_LE, p);
  }

  String utf8(int from, int to) {
    return heap != null ? new String(heap, from, to - from, StandardCharsets.UTF_8)
        : new String(buf.asSlice(from, to - from).toArray(BYTE), StandardCharsets.UTF_8);
  }

  /** Strict UTF-8, as protobuf-java checks proto3 strings: no overlong forms, surrogates or values past U+10FFFF. */
  boolean isValidUtf8(int from, int to) {
    int i = from;
    // ASCII (names, opcodes, source paths) eight bytes at a time.
    while (to - i >= 8 && (int64At(i) & 0x8080808080808080L) == 0) {
      i += 8;
    }
    while (i < to && at(i) >= 0) {
      i++;
    }
    while (i < to) {
      int c = at(i++);
      if (c >= 0) {
        continue;
      }
      if (c < (byte) 0xE0) {
        if (i >= to || c < (byte) 0xC2 || at(i++) > (byte) 0xBF) {
          return false;
        }
      } else if (c < (byte) 0xF0) {
        if (to - i < 2) {
          return false;
        }
        int c2 = at(i++);
        if (c2 > (byte) 0xBF || (c == (byte) 0xE0 && c2 < (byte) 0xA0) || (c == (byte) 0xED && c2 >= (byte) 0xA0)
            || at(i++) > (byte) 0xBF) {
          return false;
        }
      } else {
        if (to - i < 3) {
          return false;
        }
        int lead = c & 0xFF;
        int c2 = at(i++) & 0xFF;
        int lo = lead == 0xF0 ? 0x90 : 0x80;
        int hi = lead == 0xF4 ? 0x8F : 0xBF;
        if (lead > 0xF4 || c2 < lo || c2 > hi || at(i++) > (byte) 0xBF || at(i++) > (byte) 0xBF) {
          return false;
        }
      }
    }
    return true;
  }
}
