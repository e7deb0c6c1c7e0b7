package dev.xlac.hlo;

import static dev.xlac.hlo.WireSchema.WT_END_GROUP;
import static dev.xlac.hlo.WireSchema.WT_FIXED32;
import static dev.xlac.hlo.WireSchema.WT_FIXED64;
import static dev.xlac.hlo.WireSchema.WT_LEN;
import static dev.xlac.hlo.WireSchema.WT_START_GROUP;
import static dev.xlac.hlo.WireSchema.WT_VARINT;

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

  // protobuf-java's messages for what the readers reject (TRUNCATED above).
  static final String NEGATIVE_SIZE =
      "CodedInputStream encountered an embedded string or message which claimed to have negative size.";
  static final String TOO_LARGE = "Protocol message was too large.  May be malicious.";
  static final String INVALID_TAG = "Protocol message contained an invalid tag (zero).";
  static final String INVALID_WIRE_TYPE = "Protocol message tag had invalid wire type.";
  static final String INVALID_END_TAG = "Protocol message end-group tag did not match expected tag.";
  static final String TOO_DEEP = "Protocol message had too many levels of nesting.  May be malicious.";
  static final String INVALID_UTF8 = "Protocol message had invalid UTF-8.";

  /** Malformed data, reported as protobuf-java reports it: one of the messages above. */
  static InvalidProtocolBufferException invalid(String message) {
    return new InvalidProtocolBufferException(message);
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
        throw invalid(TRUNCATED);
      }
      byte b = at(p++);
      result |= (long) (b & 0x7F) << shift;
      if (b >= 0) {
        pos = p;
        return result;
      }
    }
    if (p >= limit) {
      throw invalid(TRUNCATED);
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
        throw invalid(TRUNCATED);
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
      throw invalid(INVALID_TAG);
    }
    return tag;
  }

  /** The length of a string or bytes field; the cursor stays at the first payload byte. */
  int bytesLength(int limit) throws InvalidProtocolBufferException {
    int len = varint32(limit);
    if (len < 0) {
      throw invalid(NEGATIVE_SIZE);
    }
    if (len > limit - pos) {
      throw invalid(TRUNCATED);
    }
    return len;
  }

  /** The length of an embedded message or packed field (protobuf-java pushes a limit for these). */
  int messageLength(int limit) throws InvalidProtocolBufferException {
    return messageLength(varint32(limit), limit);
  }

  /** Checks the length of an embedded message or packed field, already read (and the depth checked) by the caller. */
  int messageLength(int len, int limit) throws InvalidProtocolBufferException {
    if (len < 0) {
      throw invalid(NEGATIVE_SIZE);
    }
    if (pos + len < 0) {
      throw invalid(TOO_LARGE);
    }
    if (len > limit - pos) {
      throw invalid(TRUNCATED);
    }
    return len;
  }

  void skip(int n, int limit) throws InvalidProtocolBufferException {
    if (n > limit - pos) {
      throw invalid(TRUNCATED);
    }
    pos += n;
  }

  /**
   * Moves past the value of a field whose tag was just read, checking it as protobuf-java checks a
   * field it keeps as unknown: a group's content up to its matching end-group tag, nested no
   * deeper than {@link HloModuleReader#RECURSION_LIMIT}. {@code depth}: the nesting depth of the
   * message (or group) that holds the field. This is the one skip of the wire readers.
   */
  void skipField(int tag, int limit, int depth) throws InvalidProtocolBufferException {
    switch (tag & 7) {
      case WT_VARINT -> varint64(limit);
      case WT_FIXED64 -> skip(8, limit);
      case WT_LEN -> skip(bytesLength(limit), limit);
      case WT_FIXED32 -> skip(4, limit);
      case WT_START_GROUP -> {
        if (depth >= HloModuleReader.RECURSION_LIMIT) {
          throw invalid(TOO_DEEP);
        }
        groupEnd(tag >>> 3, limit, depth + 1);
      }
      case WT_END_GROUP -> throw invalid(INVALID_END_TAG);
      default -> throw invalid(INVALID_WIRE_TYPE);
    }
  }

  /**
   * Moves past a group's content (its start tag, with field {@code number}, was just read) and its
   * end-group tag; returns where that end tag starts. {@code depth}: the group's own nesting depth.
   */
  int groupEnd(int number, int limit, int depth) throws InvalidProtocolBufferException {
    while (true) {
      int at = pos;
      int tag = tag(limit);
      if (tag == 0) {
        throw invalid(INVALID_END_TAG);
      }
      if ((tag & 7) == WT_END_GROUP) {
        if (tag >>> 3 != number) {
          throw invalid(INVALID_END_TAG);
        }
        return at;
      }
      skipField(tag, limit, depth);
    }
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
