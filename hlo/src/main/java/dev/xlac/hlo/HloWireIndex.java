package dev.xlac.hlo;

import static dev.xlac.hlo.WireSchema.WT_FIXED32;
import static dev.xlac.hlo.WireSchema.WT_FIXED64;
import static dev.xlac.hlo.WireSchema.WT_LEN;
import static dev.xlac.hlo.WireSchema.WT_VARINT;

import com.google.protobuf.InvalidProtocolBufferException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Pass 1 of the streaming fingerprint: reads a module straight from its wire bytes into primitive
 * arrays (a few numbers per computation and instruction, no per-instruction objects), checks the
 * whole file the way protobuf-java would parse it, then validates the graph and puts it in canonical
 * order (hlo/README.md). This is the one validation walk of production code; the tests keep an
 * object-model oracle ({@code HloGraph}) that must agree with it, message for message.
 *
 * <p>What it keeps: each computation's and instruction's byte range, id, root id, and the
 * instruction's operand, control-predecessor and called-computation references (turned into
 * positions once validated), then the canonical orders. Pass 2 ({@link CanonicalWireEncoder})
 * encodes from the buffer in that order. All walks are loops over arrays; only message nesting
 * recurses, and it is bounded by {@link HloModuleReader#RECURSION_LIMIT} as in protobuf-java.
 */
final class HloWireIndex {
  static final int LIMIT = HloModuleReader.RECURSION_LIMIT;

  final MemorySegment buf;
  private final WireCursor c;

  /** Byte ranges (start, end pairs) of the HloModuleProto; more than one only if the field repeats (protobuf merges them). */
  int[] moduleSegments = new int[2];
  int moduleSegmentCount;
  private int nameStart = -1;
  private int nameEnd;
  private int entryNameStart = -1;
  private int entryNameEnd;
  private long entryId;

  // Computations, in file order.
  int compCount;
  int[] compStart = new int[8];
  int[] compEnd = new int[8];
  private long[] compId = new long[8];
  private long[] compRoot = new long[8];
  /** Instructions of computation p are firstInstr[p] until firstInstr[p + 1] (global positions in file order). */
  int[] firstInstr = new int[9];

  // Instructions, in file order.
  int instrCount;
  int[] instrStart;
  int[] instrEnd;
  private long[] instrId;
  /** Edges of instruction g are from[g] until from[g + 1] in the edge arrays. */
  int[] opFrom;
  int[] ctrlFrom;
  int[] callFrom;
  private long[] opIds = new long[64];
  private long[] ctrlIds = new long[8];
  private long[] callIds = new long[8];
  int opCount;
  int ctrlCount;
  int callCount;

  // Results of validation (positions instead of ids).
  /** Operand and control-predecessor positions within the instruction's computation. */
  int[] opPos;
  int[] ctrlPos;
  /** Called computations' file positions. */
  int[] callPos;
  /** For computation p: order[firstInstr[p] + j] is the position within p of its j-th instruction in canonical order. */
  int[] order;
  /** canonical[g]: the canonical index of global instruction g within its computation. */
  int[] canonical;
  int[] rootPos;
  /** compOrder[k]: file position of the k-th computation in canonical order; compCanonical is its inverse. */
  int[] compOrder;
  int[] compCanonical;
  int entryPos;

  private HloWireIndex(MemorySegment buf, int instructionGuess) {
    this.buf = buf;
    this.c = new WireCursor(buf);
    int n = Math.max(16, instructionGuess);
    instrStart = new int[n];
    instrEnd = new int[n];
    instrId = new long[n];
    opFrom = new int[n + 1];
    ctrlFrom = new int[n + 1];
    callFrom = new int[n + 1];
  }

  /** Thrown when the container holds no module in field 1. */
  static final class NoModuleException extends Exception {
    NoModuleException() {
      super(null, null, false, false);
    }
  }

  /**
   * Reads and checks the wire form of a file of the given kind. A wire defect is an
   * {@link InvalidProtocolBufferException} with protobuf-java's message; a missing module is a
   * {@link NoModuleException}. The graph is not validated yet ({@link #validate()}).
   */
  static HloWireIndex read(byte[] buf, int offset, int length, HloFileKind kind)
      throws InvalidProtocolBufferException, NoModuleException {
    return read(MemorySegment.ofArray(buf), offset, length, kind);
  }

  /** The same, over a heap array or a read-only mapped file. */
  static HloWireIndex read(MemorySegment buf, int offset, int length, HloFileKind kind)
      throws InvalidProtocolBufferException, NoModuleException {
    HloWireIndex x = new HloWireIndex(buf, countInstructions(buf, offset, length, kind));
    int end = offset + length;
    switch (kind) {
      case HLO_MODULE -> x.module(offset, end, 0);
      case HLO_PROTO -> x.container(WireSchema.Shipped.HLO_PROTO, offset, end, 0);
      case HLO_SNAPSHOT -> x.container(WireSchema.Shipped.HLO_SNAPSHOT, offset, end, 0);
    }
    if (x.moduleSegmentCount == 0) {
      throw new NoModuleException();
    }
    x.opFrom[x.instrCount] = x.opCount;
    x.ctrlFrom[x.instrCount] = x.ctrlCount;
    x.callFrom[x.instrCount] = x.callCount;
    x.firstInstr[x.compCount] = x.instrCount;
    return x;
  }

  /**
   * A quick estimate of the instruction count (module, computations, instruction fields only), so
   * the per-instruction arrays are allocated once at their final size. Malformed input just
   * gives a poor estimate; the real pass reports it.
   */
  private static int countInstructions(MemorySegment buf, int offset, int length, HloFileKind kind) {
    WireCursor c = new WireCursor(buf);
    try {
      int[] range = {offset, offset + length};
      int levels = kind == HloFileKind.HLO_SNAPSHOT ? 2 : kind == HloFileKind.HLO_PROTO ? 1 : 0;
      for (int l = 0; l < levels; l++) {
        if (!firstField(c, range, 1)) {
          return 0;
        }
      }
      int n = 0;
      c.pos = range[0];
      int end = range[1];
      while (c.pos < end) {
        int tag = c.tag(end);
        if (tag == (3 << 3 | WT_LEN)) {
          int len = c.bytesLength(end);
          int compEnd = c.pos + len;
          while (c.pos < compEnd) {
            int t = c.tag(compEnd);
            if (t == (2 << 3 | WT_LEN)) {
              n++;
            }
            c.skipField(t, compEnd, 0);
          }
        } else {
          c.skipField(tag, end, 0);
        }
      }
      return n;
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      return 0;
    }
  }

  private static boolean firstField(WireCursor c, int[] range, int number) throws InvalidProtocolBufferException {
    c.pos = range[0];
    while (c.pos < range[1]) {
      int tag = c.tag(range[1]);
      if (tag == (number << 3 | WT_LEN)) {
        int len = c.bytesLength(range[1]);
        range[0] = c.pos;
        range[1] = c.pos + len;
        return true;
      }
      c.skipField(tag, range[1], 0);
    }
    return false;
  }

  // ---- Pass 1: the wire walk ----

  /** HloProto or HloSnapshot: everything is checked; field 1 leads to the module. */
  private void container(WireSchema s, int start, int end, int depth) throws InvalidProtocolBufferException {
    c.pos = start;
    while (c.pos < end) {
      int tag = c.tag(end);
      if (tag == (1 << 3 | WT_LEN)) {
        int len = c.varint32(end);
        int from = enterMessage(len, end, depth);
        if (s == WireSchema.Shipped.HLO_SNAPSHOT) {
          container(WireSchema.Shipped.HLO_PROTO, from, from + len, depth + 1);
        } else {
          module(from, from + len, depth + 1);
        }
        c.pos = from + len;
      } else {
        field(s, tag, end, depth);
      }
    }
  }

  private void module(int start, int end, int depth) throws InvalidProtocolBufferException {
    if (moduleSegmentCount * 2 == moduleSegments.length) {
      moduleSegments = Arrays.copyOf(moduleSegments, moduleSegments.length * 2);
    }
    moduleSegments[moduleSegmentCount * 2] = start;
    moduleSegments[moduleSegmentCount * 2 + 1] = end;
    moduleSegmentCount++;
    c.pos = start;
    while (c.pos < end) {
      int tag = c.tag(end);
      switch (tag) {
        case 1 << 3 | WT_LEN -> {
          nameStart = string(end);
          nameEnd = c.pos;
        }
        case 2 << 3 | WT_LEN -> {
          entryNameStart = string(end);
          entryNameEnd = c.pos;
        }
        case 6 << 3 | WT_VARINT -> entryId = c.varint64(end);
        case 3 << 3 | WT_LEN -> {
          int len = c.varint32(end);
          int from = enterMessage(len, end, depth);
          computation(from, from + len, depth + 1);
          c.pos = from + len;
        }
        default -> field(WireSchema.Shipped.HLO_MODULE, tag, end, depth);
      }
    }
  }

  private void computation(int start, int end, int depth) throws InvalidProtocolBufferException {
    int p = compCount++;
    if (p + 1 == compStart.length) {
      int n = compStart.length * 2;
      compStart = Arrays.copyOf(compStart, n);
      compEnd = Arrays.copyOf(compEnd, n);
      compId = Arrays.copyOf(compId, n);
      compRoot = Arrays.copyOf(compRoot, n);
      firstInstr = Arrays.copyOf(firstInstr, n + 1);
    }
    compStart[p] = start;
    compEnd[p] = end;
    firstInstr[p] = instrCount;
    c.pos = start;
    while (c.pos < end) {
      int tag = c.tag(end);
      switch (tag) {
        case 5 << 3 | WT_VARINT -> compId[p] = c.varint64(end);
        case 6 << 3 | WT_VARINT -> compRoot[p] = c.varint64(end);
        case 2 << 3 | WT_LEN -> {
          int len = c.varint32(end);
          int from = enterMessage(len, end, depth);
          instruction(from, from + len, depth + 1);
          c.pos = from + len;
        }
        default -> field(WireSchema.Shipped.HLO_COMPUTATION, tag, end, depth);
      }
    }
  }

  private void instruction(int start, int end, int depth) throws InvalidProtocolBufferException {
    int g = instrCount++;
    if (g + 1 >= instrStart.length) {
      int n = instrStart.length + (instrStart.length >> 1) + 16;
      instrStart = Arrays.copyOf(instrStart, n);
      instrEnd = Arrays.copyOf(instrEnd, n);
      instrId = Arrays.copyOf(instrId, n);
      opFrom = Arrays.copyOf(opFrom, n + 1);
      ctrlFrom = Arrays.copyOf(ctrlFrom, n + 1);
      callFrom = Arrays.copyOf(callFrom, n + 1);
    }
    instrStart[g] = start;
    instrEnd[g] = end;
    opFrom[g] = opCount;
    ctrlFrom[g] = ctrlCount;
    callFrom[g] = callCount;
    long id = 0;
    c.pos = start;
    while (c.pos < end) {
      int tag = c.tag(end);
      switch (tag) {
        case 35 << 3 | WT_VARINT -> id = c.varint64(end);
        case 36 << 3 | WT_VARINT -> addOperand(c.varint64(end));
        case 37 << 3 | WT_VARINT -> addControl(c.varint64(end));
        case 38 << 3 | WT_VARINT -> addCall(c.varint64(end));
        case 36 << 3 | WT_LEN, 37 << 3 | WT_LEN, 38 << 3 | WT_LEN -> {
          int len = c.messageLength(end);
          int to = c.pos + len;
          int field = tag >>> 3;
          while (c.pos < to) {
            long v = c.varint64(to);
            if (field == 36) {
              addOperand(v);
            } else if (field == 37) {
              addControl(v);
            } else {
              addCall(v);
            }
          }
        }
        default -> field(WireSchema.Shipped.HLO_INSTRUCTION, tag, end, depth);
      }
    }
    instrId[g] = id;
  }

  private void addOperand(long id) {
    if (opCount == opIds.length) {
      opIds = Arrays.copyOf(opIds, opIds.length + (opIds.length >> 1) + 16);
    }
    opIds[opCount++] = id;
  }

  private void addControl(long id) {
    if (ctrlCount == ctrlIds.length) {
      ctrlIds = Arrays.copyOf(ctrlIds, ctrlIds.length * 2);
    }
    ctrlIds[ctrlCount++] = id;
  }

  private void addCall(long id) {
    if (callCount == callIds.length) {
      callIds = Arrays.copyOf(callIds, callIds.length * 2);
    }
    callIds[callCount++] = id;
  }

  /** A proto3 string: checked as UTF-8; returns its first byte, the cursor ends after it. */
  private int string(int limit) throws InvalidProtocolBufferException {
    int len = c.bytesLength(limit);
    int from = c.pos;
    if (!c.isValidUtf8(from, from + len)) {
      throw WireCursor.invalid(WireCursor.INVALID_UTF8);
    }
    c.pos = from + len;
    return from;
  }

  /** Checks the nesting depth and the declared length of an embedded message; returns its first byte. */
  private int enterMessage(int len, int limit, int depth) throws InvalidProtocolBufferException {
    if (depth >= LIMIT) {
      throw WireCursor.invalid(WireCursor.TOO_DEEP);
    }
    c.messageLength(len, limit);
    return c.pos;
  }

  /** Checks one field of a message of schema {@code s} (whose tag was just read) and moves past it. */
  private void field(WireSchema s, int tag, int limit, int depth) throws InvalidProtocolBufferException {
    int number = tag >>> 3;
    int wt = tag & 7;
    int i = s.indexOf(number);
    if (i < 0 || !s.accepts(i, wt)) {
      // A field the schema does not know (or with another wire type): kept as protobuf-java keeps it.
      c.skipField(tag, limit, depth);
      return;
    }
    byte kind = s.kinds[i];
    if (wt == WT_LEN) {
      switch (kind) {
        case WireSchema.MESSAGE -> {
          int len = c.varint32(limit);
          int from = enterMessage(len, limit, depth);
          message(s.children[i], from, from + len, depth + 1);
          c.pos = from + len;
        }
        case WireSchema.STRING -> string(limit);
        case WireSchema.BYTES -> c.skip(c.bytesLength(limit), limit);
        default -> packed(kind, limit);
      }
      return;
    }
    switch (wt) {
      case WT_VARINT -> {
        if (WireSchema.isVarint32(kind)) {
          c.varint32(limit);
        } else {
          c.varint64(limit);
        }
      }
      case WT_FIXED32 -> c.skip(4, limit);
      default -> c.skip(8, limit);
    }
  }

  private void packed(byte kind, int limit) throws InvalidProtocolBufferException {
    int len = c.messageLength(limit);
    int to = c.pos + len;
    switch (WireSchema.wireTypeOf(kind)) {
      case WT_FIXED32 -> {
        if (len % 4 != 0) {
          throw WireCursor.invalid(WireCursor.TRUNCATED);
        }
        c.pos = to;
      }
      case WT_FIXED64 -> {
        if (len % 8 != 0) {
          throw WireCursor.invalid(WireCursor.TRUNCATED);
        }
        c.pos = to;
      }
      default -> {
        boolean narrow = WireSchema.isVarint32(kind);
        while (c.pos < to) {
          if (narrow) {
            c.varint32(to);
          } else {
            c.varint64(to);
          }
        }
      }
    }
  }

  private void message(WireSchema s, int start, int end, int depth) throws InvalidProtocolBufferException {
    c.pos = start;
    while (c.pos < end) {
      field(s, c.tag(end), end, depth);
    }
  }

  // ---- Graph validation and canonical order (the tests' HloGraph oracle must agree, message for message) ----

  /** Validates the graph and computes the canonical orders; a defect is an {@link IllegalArgumentException}. */
  void validate() {
    int n = compCount;
    if (n == 0) {
      throw new IllegalArgumentException("the HLO module has no computations");
    }
    LongIntTable compById = new LongIntTable();
    compById.reset(compId, 0, n);
    for (int p = 0; p < n; p++) {
      if (compById.putIfAbsent(compId[p], p) >= 0) {
        throw new IllegalArgumentException("two computations share id " + compId[p]);
      }
    }
    entryPos = findEntry(compById);

    opPos = new int[opCount];
    ctrlPos = new int[ctrlCount];
    order = new int[instrCount];
    rootPos = new int[n];
    int maxInstr = 0;
    for (int p = 0; p < n; p++) {
      maxInstr = Math.max(maxInstr, firstInstr[p + 1] - firstInstr[p]);
    }
    WalkScratch walk = new WalkScratch(Math.max(maxInstr, n));
    LongIntTable byId = new LongIntTable();
    for (int p = 0; p < n; p++) {
      int first = firstInstr[p];
      int count = firstInstr[p + 1] - first;
      byId.reset(instrId, first, count);
      for (int i = 0; i < count; i++) {
        if (byId.putIfAbsent(instrId[first + i], i) >= 0) {
          throw new IllegalArgumentException("computation " + describeComputation(p) + " has two instructions with id "
              + instrId[first + i]);
        }
      }
      for (int i = 0; i < count; i++) {
        int g = first + i;
        for (int e = opFrom[g]; e < opFrom[g + 1]; e++) {
          int pos = byId.get(opIds[e]);
          if (pos < 0) {
            throw new IllegalArgumentException("instruction " + describeInstruction(g) + " in computation "
                + describeComputation(p) + " uses operand id " + opIds[e] + ", which is not in that computation");
          }
          opPos[e] = pos;
        }
        for (int e = ctrlFrom[g]; e < ctrlFrom[g + 1]; e++) {
          int pos = byId.get(ctrlIds[e]);
          if (pos < 0) {
            throw new IllegalArgumentException("instruction " + describeInstruction(g) + " in computation "
                + describeComputation(p) + " has control predecessor id " + ctrlIds[e]
                + ", which is not in that computation");
          }
          ctrlPos[e] = pos;
        }
      }
      int root = byId.get(compRoot[p]);
      if (root < 0) {
        if (count == 0) {
          throw new IllegalArgumentException("computation " + describeComputation(p) + " has no instructions");
        }
        throw new IllegalArgumentException("computation " + describeComputation(p) + " names root id " + compRoot[p]
            + ", which is not one of its instructions");
      }
      rootPos[p] = root;
      instructionOrder(p, root, walk);
    }
    callPos = new int[callCount];
    for (int p = 0; p < n; p++) {
      int first = firstInstr[p];
      for (int j = first; j < firstInstr[p + 1]; j++) {
        int g = first + order[j];
        for (int e = callFrom[g]; e < callFrom[g + 1]; e++) {
          int callee = compById.get(callIds[e]);
          if (callee < 0) {
            throw new IllegalArgumentException("instruction " + describeInstruction(g) + " in computation "
                + describeComputation(p) + " calls computation id " + callIds[e] + ", which is not in the module");
          }
          callPos[e] = callee;
        }
      }
    }
    computationOrder(walk);
    canonical = new int[instrCount];
    for (int p = 0; p < n; p++) {
      int first = firstInstr[p];
      for (int j = first; j < firstInstr[p + 1]; j++) {
        canonical[first + order[j]] = j - first;
      }
    }
    // Ids are not needed any more.
    opIds = ctrlIds = callIds = instrId = null;
  }

  private static final class WalkScratch {
    final boolean[] visited;
    final int[] stack;
    final int[] next;

    WalkScratch(int n) {
      visited = new boolean[n];
      stack = new int[n];
      next = new int[n];
    }
  }

  /** Iterative post-order over operands then control predecessors, from the root, then the rest in file order. */
  private void instructionOrder(int p, int root, WalkScratch w) {
    int first = firstInstr[p];
    int n = firstInstr[p + 1] - first;
    boolean[] visited = w.visited;
    Arrays.fill(visited, 0, n, false);
    int[] stack = w.stack;
    int[] next = w.next;
    int count = 0;
    for (int start = -1; start < n; start++) {
      int s = start < 0 ? root : start;
      if (visited[s]) {
        continue;
      }
      int sp = 0;
      stack[sp] = s;
      next[sp] = 0;
      visited[s] = true;
      sp++;
      while (sp > 0) {
        int cur = stack[sp - 1];
        int g = first + cur;
        int k = next[sp - 1]++;
        int ops = opFrom[g + 1] - opFrom[g];
        if (k < ops + ctrlFrom[g + 1] - ctrlFrom[g]) {
          int child = k < ops ? opPos[opFrom[g] + k] : ctrlPos[ctrlFrom[g] + k - ops];
          if (!visited[child]) {
            visited[child] = true;
            stack[sp] = child;
            next[sp] = 0;
            sp++;
          }
        } else {
          order[first + count++] = cur;
          sp--;
        }
      }
    }
  }

  /** Post-order over the call graph from the entry (callees in the canonical order of their callers), then the rest. */
  private void computationOrder(WalkScratch w) {
    int n = compCount;
    compOrder = new int[n];
    compCanonical = new int[n];
    boolean[] visited = w.visited;
    Arrays.fill(visited, 0, n, false);
    int[] stack = w.stack;
    // Cursor of each stacked computation: (canonical instruction j, edge e) flattened as a running count.
    int[] instrCursor = new int[n];
    int[] edgeCursor = new int[n];
    int count = 0;
    for (int start = -1; start < n; start++) {
      int s = start < 0 ? entryPos : start;
      if (visited[s]) {
        continue;
      }
      int sp = 0;
      stack[sp] = s;
      instrCursor[sp] = firstInstr[s];
      edgeCursor[sp] = -1;
      visited[s] = true;
      sp++;
      while (sp > 0) {
        int cur = stack[sp - 1];
        int child = nextCallee(cur, instrCursor, edgeCursor, sp - 1);
        if (child >= 0) {
          if (!visited[child]) {
            visited[child] = true;
            stack[sp] = child;
            instrCursor[sp] = firstInstr[child];
            edgeCursor[sp] = -1;
            sp++;
          }
        } else {
          compOrder[count++] = cur;
          sp--;
        }
      }
    }
    for (int k = 0; k < n; k++) {
      compCanonical[compOrder[k]] = k;
    }
  }

  /** The next callee of computation p, walking its instructions in canonical order; -1 when done. */
  private int nextCallee(int p, int[] instrCursor, int[] edgeCursor, int slot) {
    int first = firstInstr[p];
    int end = firstInstr[p + 1];
    while (instrCursor[slot] < end) {
      int g = first + order[instrCursor[slot]];
      int e = edgeCursor[slot] < 0 ? callFrom[g] : edgeCursor[slot];
      if (e < callFrom[g + 1]) {
        edgeCursor[slot] = e + 1;
        return callPos[e];
      }
      instrCursor[slot]++;
      edgeCursor[slot] = -1;
    }
    return -1;
  }

  private int findEntry(LongIntTable compById) {
    int byId = compById.get(entryId);
    if (byId >= 0) {
      return byId;
    }
    String entryName = entryName();
    if (!entryName.isEmpty()) {
      for (int p = 0; p < compCount; p++) {
        if (computationName(p).equals(entryName)) {
          return p;
        }
      }
    }
    throw new IllegalArgumentException("the entry computation (id " + entryId
        + (entryName.isEmpty() ? "" : ", name " + entryName) + ") is not in the module");
  }

  // ---- Names, read back from the bytes only when needed ----

  String moduleName() {
    return nameStart < 0 ? "" : c.utf8(nameStart, nameEnd);
  }

  private String entryName() {
    return entryNameStart < 0 ? "" : c.utf8(entryNameStart, entryNameEnd);
  }

  /** The last value of a top-level string field of a message (proto3: the last one wins), or "". */
  private String lastString(int start, int end, int number) {
    WireCursor r = new WireCursor(buf);
    long range = lastField(r, start, end, number);
    return range < 0 ? "" : r.utf8((int) (range >>> 32), (int) range);
  }

  /**
   * Where the last value of a top-level length-delimited field of the message at {@code start..end}
   * lies: {@code from << 32 | to}, or -1 when the field is absent.
   */
  private static long lastField(WireCursor r, int start, int end, int number) {
    r.pos = start;
    long range = -1;
    try {
      while (r.pos < end) {
        int tag = r.tag(end);
        if (tag == (number << 3 | WT_LEN)) {
          int len = r.bytesLength(end);
          range = (long) r.pos << 32 | (r.pos + len);
          r.pos += len;
        } else {
          r.skipField(tag, end, 0);
        }
      }
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("checked bytes failed to read", e);
    }
    return range;
  }

  String computationName(int p) {
    return lastString(compStart[p], compEnd[p], 1);
  }

  private String describeComputation(int p) {
    String name = computationName(p);
    return name.isEmpty() ? "#" + compId[p] : name;
  }

  private String describeInstruction(int g) {
    String name = lastString(instrStart[g], instrEnd[g], 1);
    return (name.isEmpty() ? "#" + instrId[g] : name) + " (" + lastString(instrStart[g], instrEnd[g], 2) + ")";
  }

  // ---- What a validated index tells about the graph (positions are file positions) ----

  int computationCount() {
    return compCount;
  }

  /** Instructions in the whole module. */
  int instructionCount() {
    return instrCount;
  }

  /** Instructions in computation {@code p}. */
  int instructionCount(int p) {
    return firstInstr[p + 1] - firstInstr[p];
  }

  /** The entry computation's position. */
  int entryPosition() {
    return entryPos;
  }

  /** The position, within computation {@code p}, of its root instruction. */
  int rootPosition(int p) {
    return rootPos[p];
  }

  /**
   * Every instruction's opcode (by global position in file order), read back from the bytes. A graph
   * repeats a few opcodes, so each distinct opcode's bytes become one String, shared.
   */
  /**
   * Each instruction's opcode, by global position: {@code names[g]}, and {@code ids[g]}, its index in
   * {@code table} (one entry per distinct opcode, in order of first use), so that counting and comparing opcodes
   * need no string hashing per instruction.
   */
  record Opcodes(String[] names, int[] ids, String[] table) {}

  /** The opcodes, read once (a diff reads them right after indexing, on the reading thread). */
  synchronized Opcodes opcodes() {
    if (opcodes == null) {
      opcodes = readOpcodes(null, null);
    }
    return opcodes;
  }

  /**
   * The same, from where each instruction's opcode is, as the encoder saw it ({@link CanonicalParts}), so the
   * instructions' fields are not read again.
   */
  synchronized Opcodes opcodes(int[] from, int[] to) {
    if (opcodes == null) {
      opcodes = readOpcodes(from, to);
    }
    return opcodes;
  }

  private Opcodes opcodes;

  private Opcodes readOpcodes(int[] known, int[] knownTo) {
    String[] out = new String[instrCount];
    int[] ids = new int[instrCount];
    List<String> table = new ArrayList<>();
    WireCursor r = new WireCursor(buf);
    int slots = 256;
    byte[][] keys = new byte[slots][];
    int[] slotIds = new int[slots];
    int size = 0;
    int none = -1;
    for (int g = 0; g < instrCount; g++) {
      long range = known != null ? (known[g] < 0 ? -1 : (long) known[g] << 32 | knownTo[g])
          : lastField(r, instrStart[g], instrEnd[g], 2);
      if (range < 0) {
        if (none < 0) {
          none = table.size();
          table.add("");
        }
        out[g] = "";
        ids[g] = none;
        continue;
      }
      int from = (int) (range >>> 32);
      int to = (int) range;
      int len = to - from;
      int h = len;
      for (int i = from; i < to; i++) {
        h = h * 31 + r.at(i);
      }
      int slot = h & (slots - 1);
      while (keys[slot] != null && !sameBytes(r, from, len, keys[slot])) {
        slot = (slot + 1) & (slots - 1);
      }
      if (keys[slot] == null) {
        if (size * 2 >= slots) {
          // Many distinct opcodes (a hostile file): no sharing from here on.
          out[g] = r.utf8(from, to);
          ids[g] = table.size();
          table.add(out[g]);
          continue;
        }
        keys[slot] = buf.asSlice(from, len).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        slotIds[slot] = table.size();
        table.add(r.utf8(from, to));
        size++;
      }
      ids[g] = slotIds[slot];
      out[g] = table.get(ids[g]);
    }
    return new Opcodes(out, ids, table.toArray(String[]::new));
  }

  private static boolean sameBytes(WireCursor r, int from, int len, byte[] key) {
    if (key.length != len) {
      return false;
    }
    for (int i = 0; i < len; i++) {
      if (r.at(from + i) != key[i]) {
        return false;
      }
    }
    return true;
  }

  /** The position, within computation {@code p}, of its {@code j}-th instruction in canonical order. */
  int canonicalInstruction(int p, int j) {
    return order[firstInstr[p] + j];
  }

  /**
   * Map from int64 ids to positions, for one computation at a time and reused across them. Ids in
   * a dense range (the usual case: XLA numbers instructions consecutively) use a direct table;
   * others an open-addressing hash table. No boxing, no per-entry objects.
   */
  private static final class LongIntTable {
    private long base;
    private int[] direct = new int[0];
    private boolean dense;
    private long[] keys = new long[0];
    private int[] values = new int[0];
    private int mask;

    void reset(long[] ids, int from, int count) {
      long min = Long.MAX_VALUE;
      long max = Long.MIN_VALUE;
      for (int i = from; i < from + count; i++) {
        min = Math.min(min, ids[i]);
        max = Math.max(max, ids[i]);
      }
      long range = count == 0 ? 0 : max - min + 1;
      dense = count > 0 && range > 0 && range <= 4L * count + 64;
      if (dense) {
        base = min;
        if (direct.length < range) {
          direct = new int[(int) range];
        }
        Arrays.fill(direct, 0, (int) range, -1);
        mask = (int) range;
        return;
      }
      int cap = Integer.highestOneBit(Math.max(4, count) * 2 - 1) << 1;
      if (keys.length < cap) {
        keys = new long[cap];
        values = new int[cap];
      }
      Arrays.fill(values, 0, cap, -1);
      mask = cap - 1;
    }

    /** Returns the existing position, or -1 after inserting. */
    int putIfAbsent(long id, int pos) {
      if (dense) {
        int i = (int) (id - base);
        int old = direct[i];
        if (old < 0) {
          direct[i] = pos;
        }
        return old;
      }
      int h = slot(id);
      while (values[h] >= 0) {
        if (keys[h] == id) {
          return values[h];
        }
        h = (h + 1) & mask;
      }
      keys[h] = id;
      values[h] = pos;
      return -1;
    }

    int get(long id) {
      if (dense) {
        long i = id - base;
        return i >= 0 && i < mask ? direct[(int) i] : -1;
      }
      int h = slot(id);
      while (values[h] >= 0) {
        if (keys[h] == id) {
          return values[h];
        }
        h = (h + 1) & mask;
      }
      return -1;
    }

    private int slot(long id) {
      long h = id * 0x9E3779B97F4A7C15L;
      return (int) (h ^ (h >>> 32)) & mask;
    }
  }
}
