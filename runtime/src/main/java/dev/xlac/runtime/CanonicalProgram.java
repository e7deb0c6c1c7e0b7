package dev.xlac.runtime;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * The program bytes the request key hashes (runtime/README.md, "Canonical program"). For format {@code hlo} (a
 * serialized {@code HloModuleProto}): the same module with every protobuf map's entries in key order, the last of
 * equal keys kept, each entry exactly its key and value, the messages on the way to the maps with their fields in
 * field-number order and minimal tags and lengths; everything else byte for byte. torch_xla writes an instruction's
 * frontend attributes in a different order from run to run, so without this the same program had a new key in every
 * process. An {@code hlo} program that does not parse is {@code 0xff} followed by its bytes (no canonical form starts
 * with {@code 0xff}); other formats are their bytes. Mirrors {@code src/main/c/program.c}; the tests compare the two.
 */
public final class CanonicalProgram {
  private CanonicalProgram() {}

  private static final byte[] HLO = "hlo".getBytes(StandardCharsets.US_ASCII);

  private enum Msg { MODULE, COMPUTATION, INSTRUCTION, SCHEDULE, ATTRIBUTES }

  private enum Kind { MESSAGE, STRING_MAP, INT64_MAP }

  private record Path(Msg in, int field, Kind kind, Msg sub) {}

  /**
   * Every {@code map} field reachable from HloModuleProto (openxla/xla {@code xla/service/hlo.proto},
   * {@code xla/xla_data.proto}) and the messages on the way to it; the same table is in program.c and
   * runtime/README.md.
   */
  private static final List<Path> PATHS = List.of(
      new Path(Msg.MODULE, 3, Kind.MESSAGE, Msg.COMPUTATION),       // HloModuleProto.computations
      new Path(Msg.MODULE, 7, Kind.MESSAGE, Msg.SCHEDULE),          // HloModuleProto.schedule
      new Path(Msg.MODULE, 19, Kind.MESSAGE, Msg.ATTRIBUTES),       // HloModuleProto.frontend_attributes
      new Path(Msg.COMPUTATION, 2, Kind.MESSAGE, Msg.INSTRUCTION),  // HloComputationProto.instructions
      new Path(Msg.INSTRUCTION, 68, Kind.MESSAGE, Msg.ATTRIBUTES),  // HloInstructionProto.frontend_attributes
      new Path(Msg.SCHEDULE, 1, Kind.INT64_MAP, null),              // HloScheduleProto.sequences
      new Path(Msg.ATTRIBUTES, 1, Kind.STRING_MAP, null));          // FrontendAttributes.map

  /** The deepest message on the way is FrontendAttributes in an instruction (level 3). */
  private static final int LEVELS = 4;

  /** The program bytes the key hashes for a program of this format (the same array when they are its bytes). */
  public static byte[] keyed(byte[] format, byte[] program) {
    if (!Arrays.equals(format, HLO)) {
      return program;
    }
    byte[] canonical = canonicalHlo(program);
    if (canonical != null) {
      return canonical;
    }
    byte[] raw = new byte[program.length + 1];
    raw[0] = (byte) 0xff;
    System.arraycopy(program, 0, raw, 1, program.length);
    return raw;
  }

  /** The canonical form of a serialized HloModuleProto, or null when it does not parse as one. */
  public static byte[] canonicalHlo(byte[] program) {
    Out[] levels = new Out[LEVELS];
    for (int i = 0; i < LEVELS; i++) {
      levels[i] = new Out(i == 0 ? program.length : 256);
    }
    try {
      canon(levels, Msg.MODULE, program, 0, program.length, 0);
      return levels[0].toByteArray();
    } catch (NotProtobuf e) {
      return null;
    }
  }

  private static final class Out extends ByteArrayOutputStream {
    Out(int size) {
      super(size);
    }

    byte[] bytes() {
      return buf;
    }
  }

  private static final class NotProtobuf extends Exception {
    private static final long serialVersionUID = 1L;

    NotProtobuf() {
      super(null, null, false, false);
    }
  }

  private record Field(int number, int wire, int index, int from, int size) {}

  /** Reads a varint into value[0]; returns its length in bytes. */
  private static int varint(byte[] b, int at, int end, long[] value) throws NotProtobuf {
    long v = 0;
    for (int i = 0; at + i < end && i < 10; i++) {
      v |= (long) (b[at + i] & 0x7f) << (7 * i);
      if ((b[at + i] & 0x80) == 0) {
        value[0] = v;
        return i + 1;
      }
    }
    throw new NotProtobuf();
  }

  /** The fields of bytes [from, end) in wire order; NotProtobuf when they are not protobuf. */
  private static List<Field> parse(byte[] b, int from, int end) throws NotProtobuf {
    List<Field> fields = new ArrayList<>();
    long[] v = new long[1];
    int at = from;
    while (at < end) {
      at += varint(b, at, end, v);
      long number = v[0] >>> 3;
      int wire = (int) (v[0] & 7);
      if (number == 0 || number > 0x1fffffff) {
        throw new NotProtobuf();
      }
      int valueAt = at;
      long size;
      switch (wire) {
        case 0 -> size = varint(b, at, end, v);
        case 1 -> size = 8;
        case 5 -> size = 4;
        case 2 -> {
          at += varint(b, at, end, v);
          valueAt = at;
          if (v[0] < 0 || v[0] > end - at) {
            throw new NotProtobuf();
          }
          size = v[0];
        }
        default -> throw new NotProtobuf(); // groups and the undefined wire types 6, 7
      }
      if (size > end - at) {
        throw new NotProtobuf();
      }
      at += (int) size;
      fields.add(new Field((int) number, wire, fields.size(), valueAt, (int) size));
    }
    return fields;
  }

  private static void putVarint(ByteArrayOutputStream out, long v) {
    while ((v & ~0x7fL) != 0) {
      out.write((int) ((v & 0x7f) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
  }

  private static int varintSize(long v) {
    int n = 1;
    while ((v & ~0x7fL) != 0) {
      v >>>= 7;
      n++;
    }
    return n;
  }

  private static void putField(ByteArrayOutputStream out, int number, int wire, byte[] b, int from, int size) {
    putVarint(out, ((long) number << 3) | wire);
    if (wire == 2) {
      putVarint(out, size);
    }
    out.write(b, from, size);
  }

  private static Path pathOf(Msg in, int field) {
    for (Path p : PATHS) {
      if (p.in() == in && p.field() == field) {
        return p;
      }
    }
    return null;
  }

  private static void canon(Out[] levels, Msg m, byte[] b, int from, int end, int depth) throws NotProtobuf {
    Out out = levels[depth];
    List<Field> fields = parse(b, from, end);
    fields.sort(Comparator.comparingInt(Field::number).thenComparingInt(Field::index));
    for (int i = 0; i < fields.size();) {
      int j = i;
      while (j < fields.size() && fields.get(j).number() == fields.get(i).number()) {
        j++;
      }
      Path p = pathOf(m, fields.get(i).number());
      if (p == null) {
        for (Field f : fields.subList(i, j)) {
          putField(out, f.number(), f.wire(), b, f.from(), f.size());
        }
      } else if (p.kind() != Kind.MESSAGE) {
        putMap(out, fields.get(i).number(), p.kind() == Kind.INT64_MAP, b, fields.subList(i, j));
      } else {
        for (Field f : fields.subList(i, j)) {
          if (f.wire() != 2 || depth + 1 >= LEVELS) {
            throw new NotProtobuf();
          }
          Out sub = levels[depth + 1];
          sub.reset();
          canon(levels, p.sub(), b, f.from(), f.from() + f.size(), depth + 1);
          putField(out, f.number(), 2, sub.bytes(), 0, sub.size());
        }
      }
      i = j;
    }
  }

  /** A map entry: its key (string bytes, or an int64) and its value's bytes. */
  private record Entry(byte[] key, long intKey, int index, byte[] value) {}

  private static final Comparator<Entry> BY_STRING_KEY =
      Comparator.<Entry, byte[]>comparing(Entry::key, Arrays::compareUnsigned).thenComparingInt(Entry::index);
  private static final Comparator<Entry> BY_INT_KEY =
      Comparator.comparing(Entry::intKey, Long::compareUnsigned).thenComparingInt(Entry::index);

  /**
   * The occurrences of a map field as canonical entries: in key order, of equal keys the last, each exactly
   * {@code 1: key, 2: value} (an absent key or value as its default; other fields of an entry, which protobuf
   * ignores, left out). A string value written twice keeps the last; a message value written twice is merged (for
   * the schedule's one repeated field, concatenated).
   */
  private static void putMap(ByteArrayOutputStream out, int number, boolean ints, byte[] b, List<Field> occurrences)
      throws NotProtobuf {
    List<Entry> entries = new ArrayList<>(occurrences.size());
    for (Field f : occurrences) {
      if (f.wire() != 2) {
        throw new NotProtobuf();
      }
      byte[] key = new byte[0];
      long intKey = 0;
      ByteArrayOutputStream value = new ByteArrayOutputStream();
      for (Field inner : parse(b, f.from(), f.from() + f.size())) {
        if (inner.number() == 1) {
          if (inner.wire() != (ints ? 0 : 2)) {
            throw new NotProtobuf();
          }
          if (ints) {
            long[] v = new long[1];
            varint(b, inner.from(), inner.from() + inner.size(), v);
            intKey = v[0];
          } else {
            key = Arrays.copyOfRange(b, inner.from(), inner.from() + inner.size());
          }
        } else if (inner.number() == 2) {
          if (inner.wire() != 2) {
            throw new NotProtobuf();
          }
          if (!ints) {
            value.reset(); // a string: the last one wins
          }
          value.write(b, inner.from(), inner.size());
        }
      }
      entries.add(new Entry(key, intKey, entries.size(), value.toByteArray()));
    }
    entries.sort(ints ? BY_INT_KEY : BY_STRING_KEY);
    for (int i = 0; i < entries.size(); i++) {
      Entry e = entries.get(i);
      if (i + 1 < entries.size() && (ints ? e.intKey() == entries.get(i + 1).intKey()
          : Arrays.equals(e.key(), entries.get(i + 1).key()))) {
        continue; // of equal keys the last occurrence wins
      }
      int keyBytes = ints ? 1 + varintSize(e.intKey()) : 1 + varintSize(e.key().length) + e.key().length;
      putVarint(out, ((long) number << 3) | 2);
      putVarint(out, keyBytes + 1 + varintSize(e.value().length) + e.value().length);
      if (ints) {
        putVarint(out, 1 << 3);
        putVarint(out, e.intKey());
      } else {
        putField(out, 1, 2, e.key(), 0, e.key().length);
      }
      putField(out, 2, 2, e.value(), 0, e.value().length);
    }
  }
}
