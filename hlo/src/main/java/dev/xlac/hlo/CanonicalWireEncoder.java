package dev.xlac.hlo;

import static dev.xlac.hlo.WireSchema.WT_FIXED32;
import static dev.xlac.hlo.WireSchema.WT_FIXED64;
import static dev.xlac.hlo.WireSchema.WT_LEN;
import static dev.xlac.hlo.WireSchema.WT_START_GROUP;
import static dev.xlac.hlo.WireSchema.WT_VARINT;

import com.google.protobuf.InvalidProtocolBufferException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Pass 2 of the streaming fingerprint: writes the canonical form (hlo/README.md) of a module that
 * {@link HloWireIndex} has read and validated, straight from the wire bytes, in canonical order.
 *
 * <p>Each message is written as its known fields in field-number order, then its unknown fields
 * by number, then an end marker, with protobuf's parse semantics: the last value of a singular
 * field wins, repeated values (packed or not) concatenate, a repeated embedded message merges,
 * a oneof keeps its last member, map entries keep the last value of a key. Per message it records
 * where its fields are (a few ints in reused arrays) and sorts them only when they are out of order.
 */
final class CanonicalWireEncoder {
  /** Ends every message. */
  static final int END = 0;
  // The value kind written after an unknown field's number, per wire type.
  static final int UNKNOWN_VARINT = 1;
  static final int UNKNOWN_FIXED32 = 2;
  static final int UNKNOWN_FIXED64 = 3;
  static final int UNKNOWN_BYTES = 4;
  static final int UNKNOWN_GROUP = 5;
  /** The order of UnknownFieldSet.Field's lists: varint, fixed32, fixed64, length-delimited, group. */
  private static final int[] UNKNOWN_WIRE_TYPES = {WT_VARINT, WT_FIXED32, WT_FIXED64, WT_LEN, WT_START_GROUP};
  private static final int[] UNKNOWN_CODES = {UNKNOWN_VARINT, UNKNOWN_FIXED32, UNKNOWN_FIXED64, UNKNOWN_BYTES, UNKNOWN_GROUP};

  // Modes of values(): what to do with the values of a repeated scalar field.
  private static final int COUNT = 0;
  private static final int ANY_NONZERO = 1;
  private static final int ANY_ZERO = 2;
  private static final int WRITE = 3;

  private static final WireSchema MODULE = WireSchema.Shipped.HLO_MODULE;
  private static final WireSchema COMPUTATION = WireSchema.Shipped.HLO_COMPUTATION;
  private static final WireSchema INSTRUCTION = WireSchema.Shipped.HLO_INSTRUCTION;
  private static final int[] MODULE_FORCED = {MODULE.indexOfNumber(3), MODULE.indexOfNumber(6)};
  private static final int[] COMPUTATION_FORCED = {COMPUTATION.indexOfNumber(2), COMPUTATION.indexOfNumber(6)};
  private static final int[] INSTRUCTION_FORCED =
      {INSTRUCTION.indexOfNumber(36), INSTRUCTION.indexOfNumber(37), INSTRUCTION.indexOfNumber(38)};
  private static final int SHAPE_ELEMENT_TYPE = 2;
  private static final int SHAPE_LAYOUT = 5;
  private static final int[] SHAPE_FORCED = {WireSchema.Shipped.SHAPE_SCHEMA.indexOfNumber(SHAPE_LAYOUT)};
  private static final int SHAPE_DIMENSIONS = 3;
  private static final int SHAPE_IS_DYNAMIC_DIMENSION = 6;
  private static final int LAYOUT_MINOR_TO_MAJOR = 1;
  private static final int LAYOUT_DIM_LEVEL_TYPES = 9;
  private static final int LAYOUT_DIM_UNIQUE = 13;
  private static final int LAYOUT_DIM_ORDERED = 14;
  private static final int LAYOUT_TAIL_PADDING_ALIGNMENT = 16;
  private static final int INSTR_CHANNEL_ID = 26;
  private static final int INSTR_ALL_REDUCE_ID = 45;

  private final HloWireIndex x;
  private final MemorySegment buf;
  private final WireCursor c;
  private CanonicalSink out;
  private final Map<Long, Integer> channels = new HashMap<>();
  private Frame[] frames = new Frame[8];
  private int currentComputation;
  private int currentInstruction;
  private int[] scratch = new int[16];
  private final ShapeMemo shapes = new ShapeMemo();
  /** Small modules are encoded before the JIT compiles this class; there the memo costs more than it saves. */
  private final boolean memoize;

  /** Where the fields of one message are: per occurrence, a sort key (field index, then wire order), wire type and range. */
  private static final class Frame {
    int[] segments = new int[2];
    int segmentCount;
    long[] keys = new long[16];
    int[] start = new int[16];
    int[] end = new int[16];
    byte[] wireType = new byte[16];
    int n;

    void segment(int from, int to) {
      if (segmentCount * 2 == segments.length) {
        segments = Arrays.copyOf(segments, segments.length * 2);
      }
      segments[segmentCount * 2] = from;
      segments[segmentCount * 2 + 1] = to;
      segmentCount++;
    }

    int seq(int i) {
      return (int) keys[i];
    }

    int key(int i) {
      return (int) (keys[i] >>> 32);
    }
  }

  /**
   * Told where each computation and instruction begins and ends in the canonical stream, and where
   * an instruction's references (operands, control predecessors, callees) are written; the diff
   * ({@link GraphDiff}) uses it to hash each part of the canonical form on its own.
   */
  interface Spans {
    void enterComputation(int p);

    void exitComputation(int p);

    void enterInstruction(int g);

    void exitInstruction(int g);

    void enterReferences();

    void exitReferences();

    /**
     * Instruction {@code g}'s opcode is bytes {@code [from, to)} of the index's buffer (its last field 2, as
     * protobuf reads it), or -1, -1 when it has none; told before the instruction is written.
     */
    default void opcode(int g, int from, int to) {}
  }

  private final Spans spans;

  CanonicalWireEncoder(HloWireIndex index, CanonicalSink out) {
    this(index, out, null);
  }

  /** {@code spans}: told of the parts as they are written, or null. */
  CanonicalWireEncoder(HloWireIndex index, CanonicalSink out, Spans spans) {
    this.spans = spans;
    this.x = index;
    this.buf = index.buf;
    this.c = new WireCursor(buf);
    this.out = out;
    this.memoize = index.instrCount >= MEMO_FROM_INSTRUCTIONS;
  }

  static final int MEMO_FROM_INSTRUCTIONS = 2048;

  void module() {
    Frame f = frame(0);
    f.segmentCount = 0;
    for (int i = 0; i < x.moduleSegmentCount; i++) {
      f.segment(x.moduleSegments[2 * i], x.moduleSegments[2 * i + 1]);
    }
    message(MODULE, 0);
  }

  private Frame frame(int depth) {
    if (depth >= frames.length) {
      frames = Arrays.copyOf(frames, Math.max(depth + 1, frames.length * 2));
    }
    Frame f = frames[depth];
    if (f == null) {
      f = frames[depth] = new Frame();
    }
    return f;
  }

  /** Writes the message whose byte ranges are in {@code frame(depth)}. */
  private void message(WireSchema s, int depth) {
    Frame f = frame(depth);
    scan(s, f);
    if (spans != null && s.role == WireSchema.INSTRUCTION) {
      opcode(f);
    }
    int[] forced = switch (s.role) {
      case WireSchema.MODULE -> MODULE_FORCED;
      case WireSchema.COMPUTATION -> COMPUTATION_FORCED;
      case WireSchema.INSTRUCTION -> INSTRUCTION_FORCED;
      case WireSchema.SHAPE -> SHAPE_FORCED;
      default -> null;
    };
    int known = s.size();
    int nextForced = 0;
    int i = 0;
    while (i < f.n) {
      int key = f.key(i);
      int j = i + 1;
      while (j < f.n && f.key(j) == key) {
        j++;
      }
      if (forced != null) {
        while (nextForced < forced.length && forced[nextForced] < key) {
          special(s, forced[nextForced++], f, 0, 0, depth);
        }
        if (nextForced < forced.length && forced[nextForced] == key) {
          nextForced++;
          special(s, key, f, i, j, depth);
          i = j;
          continue;
        }
      }
      if (key < known) {
        field(s, key, f, i, j, depth);
      } else {
        unknown(key - known, f, i, j, depth);
      }
      i = j;
    }
    if (forced != null) {
      while (nextForced < forced.length) {
        special(s, forced[nextForced++], f, 0, 0, depth);
      }
    }
    out.i32(END);
  }

  private static final int INSTR_OPCODE = INSTRUCTION.indexOfNumber(2);

  /** Tells the spans where the current instruction's opcode is: the last occurrence of field 2, the one protobuf keeps. */
  private void opcode(Frame f) {
    int from = -1;
    int to = -1;
    for (int i = 0; i < f.n; i++) {
      if (f.key(i) == INSTR_OPCODE) { // sorted by field, then wire order: the last one wins
        from = f.start[i];
        to = f.end[i];
      }
    }
    spans.opcode(currentInstruction, from, to);
  }

  /**
   * Writes a message like {@link #message}, but a shape whose bytes were seen before is written
   * from the memo. A shape's canonical form depends on its bytes alone (no ids, channels or
   * context), and a graph repeats a few shapes on most of its instructions.
   */
  private void memoMessage(WireSchema s, int depth) {
    Frame f = frame(depth);
    int from = f.segments[0];
    int len = f.segments[1] - from;
    if (!memoize || s.role != WireSchema.SHAPE || f.segmentCount != 1 || len > ShapeMemo.MAX_KEY_BYTES) {
      message(s, depth);
      return;
    }
    int slot = shapes.find(c, from, len);
    if (slot >= 0) {
      out.raw(shapes.values[slot]);
      return;
    }
    CanonicalSink saved = out;
    CanonicalSink.Memory mem = new CanonicalSink.Memory();
    out = mem;
    try {
      message(s, depth);
    } finally {
      out = saved;
    }
    byte[] canonical = mem.toByteArray();
    if (slot != ShapeMemo.FULL) {
      shapes.put(~slot, buf, from, len, canonical);
    }
    out.raw(canonical);
  }

  /** Canonical forms of shapes by their wire bytes: open addressing, bounded, no eviction. */
  private static final class ShapeMemo {
    static final int MAX_KEY_BYTES = 256;
    private static final int SLOTS = 1 << 12;
    private static final int MAX_ENTRIES = SLOTS / 2;
    final byte[][] keys = new byte[SLOTS][];
    final byte[][] values = new byte[SLOTS][];
    private final int[] hashes = new int[SLOTS];
    private int size;
    private int lastHash;

    static final int FULL = Integer.MIN_VALUE;

    /** The slot holding these bytes, else the complement of the free slot where they would go, or FULL. */
    int find(WireCursor c, int from, int len) {
      MemorySegment b = c.buf;
      int h = hash(c, from, len);
      lastHash = h;
      int i = h & (SLOTS - 1);
      while (keys[i] != null) {
        byte[] k = keys[i];
        if (hashes[i] == h && k.length == len && (c.heap != null ? Arrays.equals(c.heap, from, from + len, k, 0, len)
            : MemorySegment.mismatch(b, from, from + len, MemorySegment.ofArray(k), 0, len) < 0)) {
          return i;
        }
        i = (i + 1) & (SLOTS - 1);
      }
      return size < MAX_ENTRIES ? ~i : FULL;
    }

    void put(int slot, MemorySegment b, int from, int len, byte[] canonical) {
      keys[slot] = b.asSlice(from, len).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
      values[slot] = canonical;
      hashes[slot] = lastHash;
      size++;
    }

    private static int hash(WireCursor b, int from, int len) {
      long h = len;
      int p = from;
      int end = from + len;
      for (; end - p >= 8; p += 8) {
        h = (h ^ b.int64At(p)) * 0x9E3779B97F4A7C15L;
      }
      for (; p < end; p++) {
        h = (h ^ b.at(p)) * 0x9E3779B97F4A7C15L;
      }
      return (int) (h ^ (h >>> 32));
    }
  }

  /** A length-prefixed byte string of the buffer. */
  private void bytes(int from, int len) {
    if (c.heap != null) {
      out.bytes(c.heap, from, len);
    } else {
      out.bytes(buf, from, len);
    }
  }

  /** Records where each field of the message is, and sorts by (known field index | unknown number), then wire order. */
  private void scan(WireSchema s, Frame f) {
    f.n = 0;
    int known = s.size();
    boolean sorted = true;
    int last = -1;
    try {
      for (int k = 0; k < f.segmentCount; k++) {
        int end = f.segments[2 * k + 1];
        c.pos = f.segments[2 * k];
        while (c.pos < end) {
          int tag = c.tag(end);
          int number = tag >>> 3;
          int wt = tag & 7;
          int from = c.pos;
          int to;
          if (wt == WT_LEN) {
            int len = c.bytesLength(end);
            from = c.pos;
            to = from + len;
            c.pos = to;
          } else if (wt == WT_START_GROUP) {
            to = c.groupEnd(number, end, 0);
          } else {
            c.skipField(tag, end, 0);
            to = c.pos;
          }
          int i = s.indexOf(number);
          int key = i >= 0 && s.accepts(i, wt) ? i : known + number;
          if (key < last) {
            sorted = false;
          }
          last = key;
          add(f, key, wt, from, to);
        }
      }
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("checked bytes failed to read", e);
    }
    if (!sorted) {
      sortFrame(f);
    }
  }

  private static void add(Frame f, int key, int wt, int from, int to) {
    int i = f.n;
    if (i == f.keys.length) {
      int n = i * 2;
      f.keys = Arrays.copyOf(f.keys, n);
      f.start = Arrays.copyOf(f.start, n);
      f.end = Arrays.copyOf(f.end, n);
      f.wireType = Arrays.copyOf(f.wireType, n);
    }
    f.keys[i] = (long) key << 32 | i;
    f.start[i] = from;
    f.end[i] = to;
    f.wireType[i] = (byte) wt;
    f.n = i + 1;
  }

  private static void sortFrame(Frame f) {
    int n = f.n;
    int[] start = Arrays.copyOf(f.start, n);
    int[] end = Arrays.copyOf(f.end, n);
    byte[] wt = Arrays.copyOf(f.wireType, n);
    Arrays.sort(f.keys, 0, n);
    for (int i = 0; i < n; i++) {
      int seq = f.seq(i);
      f.start[i] = start[seq];
      f.end[i] = end[seq];
      f.wireType[i] = wt[seq];
    }
  }

  // ---- The rules of particular types ----

  private void special(WireSchema s, int i, Frame f, int from, int to, int depth) {
    int number = s.numbers[i];
    switch (s.role) {
      case WireSchema.MODULE -> {
        out.i32(number);
        if (number == 3) {
          out.i32(x.compCount);
          for (int k = 0; k < x.compCount; k++) {
            computation(x.compOrder[k], depth + 1);
          }
        } else {
          out.i32(x.compCanonical[x.entryPos]);
        }
      }
      case WireSchema.COMPUTATION -> {
        int p = currentComputation;
        out.i32(number);
        if (number == 2) {
          int first = x.firstInstr[p];
          int n = x.instructionCount(p);
          out.i32(n);
          for (int j = 0; j < n; j++) {
            instruction(first + x.order[first + j], depth + 1);
            currentComputation = p;
          }
        } else {
          out.i32(x.canonical[x.firstInstr[p] + x.rootPos[p]]);
        }
      }
      case WireSchema.INSTRUCTION -> {
        if (spans != null) {
          spans.enterReferences();
        }
        references(number);
        if (spans != null) {
          spans.exitReferences();
        }
      }
      case WireSchema.SHAPE -> {
        if (to > from) {
          field(s, i, f, from, to, depth);
        } else {
          defaultLayout(s, f);
        }
      }
      default -> throw new IllegalStateException("no special fields in " + s.name);
    }
  }

  private void computation(int p, int depth) {
    currentComputation = p;
    Frame f = frame(depth);
    f.segmentCount = 0;
    f.segment(x.compStart[p], x.compEnd[p]);
    if (spans != null) {
      spans.enterComputation(p);
    }
    message(COMPUTATION, depth);
    if (spans != null) {
      spans.exitComputation(p);
    }
  }

  private void instruction(int g, int depth) {
    currentInstruction = g;
    Frame f = frame(depth);
    f.segmentCount = 0;
    f.segment(x.instrStart[g], x.instrEnd[g]);
    if (spans != null) {
      spans.enterInstruction(g);
    }
    message(INSTRUCTION, depth);
    if (spans != null) {
      spans.exitInstruction(g);
    }
  }

  /** Operands, control predecessors and callees as canonical indices. */
  private void references(int number) {
    int g = currentInstruction;
    int first = x.firstInstr[currentComputation];
    switch (number) {
      case 36 -> {
        int from = x.opFrom[g];
        int n = x.opFrom[g + 1] - from;
        if (n > 0) {
          out.i32(36);
          out.i32(n);
          for (int e = from; e < from + n; e++) {
            out.i32(x.canonical[first + x.opPos[e]]);
          }
        }
      }
      case 37 -> {
        int from = x.ctrlFrom[g];
        int n = x.ctrlFrom[g + 1] - from;
        if (n > 0) {
          // A set: order carries no meaning.
          if (scratch.length < n) {
            scratch = new int[n];
          }
          for (int e = 0; e < n; e++) {
            scratch[e] = x.canonical[first + x.ctrlPos[from + e]];
          }
          Arrays.sort(scratch, 0, n);
          int distinct = 0;
          for (int e = 0; e < n; e++) {
            if (e == 0 || scratch[e] != scratch[e - 1]) {
              scratch[distinct++] = scratch[e];
            }
          }
          out.i32(37);
          out.i32(distinct);
          for (int e = 0; e < distinct; e++) {
            out.i32(scratch[e]);
          }
        }
      }
      default -> {
        int from = x.callFrom[g];
        int n = x.callFrom[g + 1] - from;
        if (n > 0) {
          out.i32(38);
          out.i32(n);
          for (int e = from; e < from + n; e++) {
            out.i32(x.compCanonical[x.callPos[e]]);
          }
        }
      }
    }
  }

  /** An array shape without a layout is written as XLA's default layout (minor_to_major = rank-1 ... 0). */
  private void defaultLayout(WireSchema s, Frame f) {
    int typeKey = s.indexOfNumber(SHAPE_ELEMENT_TYPE);
    int dimsKey = s.indexOfNumber(SHAPE_DIMENSIONS);
    int elementType = 0;
    int rank = 0;
    for (int i = 0; i < f.n; i++) {
      int key = f.key(i);
      if (key == typeKey) {
        elementType = (int) scalar(f.wireType[i], f.start[i]);
      } else if (key == dimsKey) {
        int j = i;
        while (j < f.n && f.key(j) == dimsKey) {
          j++;
        }
        rank = values(WireSchema.INT64, f, i, j, COUNT);
        i = j - 1;
      }
    }
    if (!WireSchema.isArrayType(elementType)) {
      return;
    }
    out.i32(SHAPE_LAYOUT);
    out.i32(LAYOUT_MINOR_TO_MAJOR);
    out.i32(rank);
    for (int d = rank - 1; d >= 0; d--) {
      out.i64(d);
    }
    out.i32(END);
  }

  // ---- Generic fields ----

  private void field(WireSchema s, int i, Frame f, int from, int to, int depth) {
    if (s.skip[i]) {
      return;
    }
    int number = s.numbers[i];
    byte kind = s.kinds[i];
    if (s.repeated[i]) {
      if (s.map[i]) {
        mapField(s, i, f, from, to, depth);
      } else if (kind == WireSchema.MESSAGE) {
        out.i32(number);
        out.i32(to - from);
        Frame child = frame(depth + 1);
        for (int k = from; k < to; k++) {
          child.segmentCount = 0;
          child.segment(f.start[k], f.end[k]);
          memoMessage(s.children[i], depth + 1);
        }
      } else if (kind == WireSchema.STRING || kind == WireSchema.BYTES) {
        out.i32(number);
        out.i32(to - from);
        for (int k = from; k < to; k++) {
          bytes(f.start[k], f.end[k] - f.start[k]);
        }
      } else {
        repeatedScalar(s, i, f, from, to);
      }
      return;
    }
    int oneof = s.oneof[i];
    int lastOther = oneof < 0 ? -1 : lastOtherMember(s, i, f);
    if (kind == WireSchema.MESSAGE) {
      Frame child = frame(depth + 1);
      child.segmentCount = 0;
      for (int k = from; k < to; k++) {
        if (f.seq(k) > lastOther) {
          child.segment(f.start[k], f.end[k]);
        }
      }
      if (child.segmentCount > 0) {
        out.i32(number);
        memoMessage(s.children[i], depth + 1);
      }
      return;
    }
    int k = to - 1;
    if (oneof >= 0 && f.seq(k) < lastOther) {
      return; // another member of the oneof came later
    }
    if (kind == WireSchema.STRING || kind == WireSchema.BYTES) {
      int len = f.end[k] - f.start[k];
      if (len > 0 || oneof >= 0) {
        out.i32(number);
        bytes(f.start[k], len);
      }
      return;
    }
    long raw = scalar(f.wireType[k], f.start[k]);
    boolean present = oneof >= 0 || !isDefault(kind, raw);
    if (!present) {
      return;
    }
    if (s.role == WireSchema.LAYOUT && number == LAYOUT_TAIL_PADDING_ALIGNMENT && raw <= 1) {
      return; // 0 and 1 mean the same
    }
    if (s.role == WireSchema.INSTRUCTION && (number == INSTR_CHANNEL_ID || number == INSTR_ALL_REDUCE_ID)) {
      // Channels pair up collectives; only which instructions share one matters.
      out.i32(number);
      out.i32(channels.computeIfAbsent(raw, ch -> channels.size() + 1));
      return;
    }
    out.i32(number);
    write(kind, raw);
  }

  /** The wire position (sequence) of the last occurrence of another member of field i's oneof, or -1. */
  private static int lastOtherMember(WireSchema s, int i, Frame f) {
    int last = -1;
    for (int k = 0; k < f.n; k++) {
      int key = f.key(k);
      if (key != i && key < s.size() && s.oneof[key] == s.oneof[i]) {
        last = Math.max(last, f.seq(k));
      }
    }
    return last;
  }

  private void repeatedScalar(WireSchema s, int i, Frame f, int from, int to) {
    byte kind = s.kinds[i];
    int number = s.numbers[i];
    if (s.role == WireSchema.SHAPE && number == SHAPE_IS_DYNAMIC_DIMENSION) {
      if (values(kind, f, from, to, ANY_NONZERO) == 0) {
        return; // all false means static
      }
    } else if (s.role == WireSchema.LAYOUT) {
      if (number == LAYOUT_DIM_LEVEL_TYPES && values(kind, f, from, to, ANY_NONZERO) == 0) {
        return; // all dense
      }
      if ((number == LAYOUT_DIM_UNIQUE || number == LAYOUT_DIM_ORDERED) && values(kind, f, from, to, ANY_ZERO) == 0) {
        return; // all true
      }
    }
    int n = values(kind, f, from, to, COUNT);
    if (n == 0) {
      return;
    }
    out.i32(number);
    out.i32(n);
    values(kind, f, from, to, WRITE);
  }

  /** Walks the values of a repeated scalar field (packed or not): counts them, tests them, or writes them. */
  private int values(byte kind, Frame f, int from, int to, int mode) {
    int count = 0;
    try {
      for (int k = from; k < to; k++) {
        int wt = f.wireType[k];
        int expected = WireSchema.wireTypeOf(kind);
        if (wt != WT_LEN) {
          long v = scalar(wt, f.start[k]);
          count++;
          if (test(kind, v, mode)) {
            return 1;
          }
          continue;
        }
        int end = f.end[k];
        if (expected != WT_VARINT) {
          int width = expected == WT_FIXED32 ? 4 : 8;
          if (mode == COUNT) {
            count += (end - f.start[k]) / width;
            continue;
          }
          for (int p = f.start[k]; p < end; p += width) {
            long v = width == 4 ? c.int32At(p) : c.int64At(p);
            count++;
            if (test(kind, v, mode)) {
              return 1;
            }
          }
          continue;
        }
        c.pos = f.start[k];
        while (c.pos < end) {
          long v = c.varint64(end);
          count++;
          if (test(kind, v, mode)) {
            return 1;
          }
        }
      }
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("checked bytes failed to read", e);
    }
    return mode == ANY_NONZERO || mode == ANY_ZERO ? 0 : count;
  }

  private boolean test(byte kind, long v, int mode) {
    return switch (mode) {
      case ANY_NONZERO -> !isDefault(kind, v);
      case ANY_ZERO -> isDefault(kind, v);
      case WRITE -> {
        write(kind, v);
        yield false;
      }
      default -> false;
    };
  }

  /** The raw bits of a scalar occurrence: a varint's 64 bits, or a fixed-width value. */
  private long scalar(int wt, int start) {
    try {
      return switch (wt) {
        case WT_VARINT -> {
          c.pos = start;
          yield c.varint64((int) buf.byteSize());
        }
        case WT_FIXED32 -> c.int32At(start);
        case WT_FIXED64 -> c.int64At(start);
        default -> throw new IllegalStateException("not a scalar: wire type " + wt);
      };
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("checked bytes failed to read", e);
    }
  }

  /** proto3 presence: a scalar equal to its default counts as absent (floats by their bits, so -0.0 is present). */
  private static boolean isDefault(byte kind, long raw) {
    return switch (kind) {
      case WireSchema.INT32, WireSchema.UINT32, WireSchema.SINT32, WireSchema.ENUM, WireSchema.FIXED32,
          WireSchema.SFIXED32, WireSchema.FLOAT -> (int) raw == 0;
      default -> raw == 0;
    };
  }

  /** One scalar value, as the object-model encoder wrote it (32-bit integers widened with their sign). */
  private void write(byte kind, long raw) {
    switch (kind) {
      case WireSchema.INT32, WireSchema.UINT32, WireSchema.ENUM, WireSchema.FIXED32, WireSchema.SFIXED32 ->
          out.i64((int) raw);
      case WireSchema.SINT32 -> {
        int v = (int) raw;
        out.i64((v >>> 1) ^ -(v & 1));
      }
      case WireSchema.SINT64 -> out.i64((raw >>> 1) ^ -(raw & 1));
      case WireSchema.BOOL -> out.u8(raw != 0 ? 1 : 0);
      case WireSchema.FLOAT -> out.i32((int) raw);
      default -> out.i64(raw); // INT64, UINT64, FIXED64, SFIXED64, DOUBLE
    }
  }

  // ---- Maps ----

  /** Map entries, one per key (the last wins), sorted by their canonical bytes: a map's wire order means nothing. */
  private void mapField(WireSchema s, int i, Frame f, int from, int to, int depth) {
    WireSchema entry = s.children[i];
    Map<ByteBuffer, byte[]> byKey = new LinkedHashMap<>();
    CanonicalSink saved = out;
    try {
      for (int k = from; k < to; k++) {
        CanonicalSink.Memory mem = new CanonicalSink.Memory();
        out = mem;
        Frame ef = frame(depth + 1);
        ef.segmentCount = 0;
        ef.segment(f.start[k], f.end[k]);
        scan(entry, ef);
        entryField(entry, 0, ef, depth + 1);
        byte[] key = mem.toByteArray();
        entryField(entry, 1, ef, depth + 1);
        out.i32(END);
        byKey.put(ByteBuffer.wrap(key), mem.toByteArray());
      }
    } finally {
      out = saved;
    }
    List<byte[]> entries = new ArrayList<>(byKey.values());
    entries.sort(Arrays::compareUnsigned);
    out.i32(s.numbers[i]);
    out.i32(entries.size());
    for (byte[] e : entries) {
      out.bytes(e);
    }
  }

  /** A map entry's key or value: always written, its default when absent (a map entry always has both). */
  private void entryField(WireSchema entry, int i, Frame ef, int depth) {
    int from = 0;
    while (from < ef.n && ef.key(from) < i) {
      from++;
    }
    int to = from;
    while (to < ef.n && ef.key(to) == i) {
      to++;
    }
    byte kind = entry.kinds[i];
    out.i32(entry.numbers[i]);
    if (kind == WireSchema.MESSAGE) {
      Frame child = frame(depth + 1);
      child.segmentCount = 0;
      for (int k = from; k < to; k++) {
        child.segment(ef.start[k], ef.end[k]);
      }
      message(entry.children[i], depth + 1);
    } else if (kind == WireSchema.STRING || kind == WireSchema.BYTES) {
      if (to > from) {
        bytes(ef.start[to - 1], ef.end[to - 1] - ef.start[to - 1]);
      } else {
        out.i64(0);
      }
    } else {
      write(kind, to > from ? scalar(ef.wireType[to - 1], ef.start[to - 1]) : 0);
    }
  }

  // ---- Unknown fields ----

  /** One unknown field number: its values grouped by wire kind, as protobuf's UnknownFieldSet holds them. */
  private void unknown(int number, Frame f, int from, int to, int depth) {
    out.i32(-number);
    for (int t = 0; t < UNKNOWN_WIRE_TYPES.length; t++) {
      int count = 0;
      for (int k = from; k < to; k++) {
        if (f.wireType[k] == UNKNOWN_WIRE_TYPES[t]) {
          count++;
        }
      }
      if (count == 0) {
        continue;
      }
      out.u8(UNKNOWN_CODES[t]);
      out.i32(count);
      for (int k = from; k < to; k++) {
        if (f.wireType[k] != UNKNOWN_WIRE_TYPES[t]) {
          continue;
        }
        switch (UNKNOWN_WIRE_TYPES[t]) {
          case WT_VARINT -> out.i64(scalar(WT_VARINT, f.start[k]));
          case WT_FIXED32 -> out.i32(c.int32At(f.start[k]));
          case WT_FIXED64 -> out.i64(c.int64At(f.start[k]));
          case WT_LEN -> bytes(f.start[k], f.end[k] - f.start[k]);
          default -> {
            Frame child = frame(depth + 1);
            child.segmentCount = 0;
            child.segment(f.start[k], f.end[k]);
            message(WireSchema.EMPTY, depth + 1);
          }
        }
      }
    }
  }
}
