package dev.xlac.runtime;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * The canonical form of a serialized {@code CompileOptionsProto} (runtime/README.md, "Canonical compile
 * options"): fields in field-number order, map entries in key order with the last of equal keys kept,
 * minimal tags and lengths, so that two serializations of the same options give the same bytes (JAX
 * writes the entries of its map fields in a different order on every run). Bytes that are not protobuf
 * become {@code 0xff} followed by themselves. Mirrors {@code src/main/c/options.c}; the tests compare the
 * two.
 */
public final class CanonicalOptions {
  private CanonicalOptions() {}

  private enum Msg { PLAIN, COMPILE_OPTIONS, BUILD_OPTIONS, DEBUG_OPTIONS, OPTION_OVERRIDE }

  /** A field that is a sub-message to canonicalise, or a map (value: the map value's message). */
  private record Special(boolean map, Msg value) {}

  /**
   * DebugOptions fields left out of the canonical form: they steer only where and what XLA dumps, or
   * name a local path, never the executable (JAX's own cache key clears the same ones). {@code xlac dump}
   * switches dumping on through XLA_FLAGS, which JAX copies into these fields; without this rule a
   * request recorded while dumping would never be served to a run that does not dump. The same list is
   * in options.c and runtime/README.md.
   */
  public static final List<Integer> DEBUG_OPTIONS_DROPPED_FIELDS =
      List.of(61, 102, 109, 110, 111, 112, 113, 114, 115, 116, 118, 132, 144, 149, 151, 153, 154, 164);

  /**
   * The table of runtime/README.md; field numbers from openxla/xla {@code xla/pjrt/proto/compile_options.proto}
   * and {@code xla/xla.proto}. The map fields of DebugOptions are all of its {@code map<>} fields.
   */
  private static final Map<Msg, Map<Integer, Special>> SPECIALS = Map.of(
      Msg.COMPILE_OPTIONS, Map.of(
          3, new Special(false, Msg.BUILD_OPTIONS),      // executable_build_options
          7, new Special(true, Msg.OPTION_OVERRIDE)),    // env_option_overrides
      Msg.BUILD_OPTIONS, Map.of(
          3, new Special(false, Msg.DEBUG_OPTIONS)),     // debug_options
      Msg.DEBUG_OPTIONS, Map.of(
          357, new Special(true, Msg.PLAIN),             // xla_gpu_analytical_latency_estimator_options
          500, new Special(true, Msg.PLAIN)));           // xla_backend_extra_options

  /** The field numbers of DebugOptions' map fields (for documentation and tests). */
  public static final List<Integer> DEBUG_OPTIONS_MAP_FIELDS = List.of(357, 500);

  private static final int MAX_DEPTH = 8;

  /**
   * Field names of the messages of the table (openxla/xla {@code compile_options.proto}, {@code xla.proto}), for
   * {@link #differences}; a field not named here is said by its number.
   */
  private static final Map<Msg, Map<Integer, String>> NAMES = Map.of(
      Msg.COMPILE_OPTIONS, Map.of(1, "argument_layouts", 2, "parameter_is_tupled_arguments", 3,
          "executable_build_options", 4, "compile_portable_executable", 7, "env_option_overrides"),
      Msg.BUILD_OPTIONS, Map.of(1, "device_ordinal", 3, "debug_options", 4, "num_replicas", 5, "num_partitions"),
      Msg.DEBUG_OPTIONS, Map.of(357, "xla_gpu_analytical_latency_estimator_options", 500,
          "xla_backend_extra_options"));

  /**
   * Where two serialized CompileOptionsProtos differ in their canonical forms: one entry per differing field,
   * {@code executable_build_options.num_replicas (field 3.4)}, {@code
   * executable_build_options.debug_options.#205 (field 3.3.205)} (a field without a name here), {@code
   * env_option_overrides[xla_foo] (field 7)} (a map entry, by its key); {@code unparseable options} when either is
   * not protobuf. Empty when the canonical forms are equal (the options are the same for the key).
   */
  public static List<String> differences(byte[] a, byte[] b) {
    byte[] ca = canonical(a);
    byte[] cb = canonical(b);
    if (Arrays.equals(ca, cb)) {
      return List.of();
    }
    if (ca.length > 0 && ca[0] == (byte) 0xff || cb.length > 0 && cb[0] == (byte) 0xff) {
      return List.of("unparseable options");
    }
    List<String> out = new ArrayList<>();
    try {
      diff(Msg.COMPILE_OPTIONS, ca, cb, "", "", out);
    } catch (NotProtobuf e) {
      return List.of("unparseable options"); // not reached: both canonical forms parsed
    }
    return out;
  }

  private static void diff(Msg m, byte[] a, byte[] b, String names, String numbers, List<String> out)
      throws NotProtobuf {
    Map<Integer, List<Field>> fa = byNumber(parse(a, 0, a.length));
    Map<Integer, List<Field>> fb = byNumber(parse(b, 0, b.length));
    java.util.TreeSet<Integer> all = new java.util.TreeSet<>(fa.keySet());
    all.addAll(fb.keySet());
    for (int n : all) {
      List<Field> xa = fa.getOrDefault(n, List.of());
      List<Field> xb = fb.getOrDefault(n, List.of());
      if (samePayloads(xa, xb)) {
        continue;
      }
      String name = names + NAMES.getOrDefault(m, Map.of()).getOrDefault(n, "#" + n);
      String number = numbers + n;
      Special s = SPECIALS.getOrDefault(m, Map.of()).get(n);
      if (s != null && !s.map() && xa.size() == 1 && xb.size() == 1) {
        diff(s.value(), xa.getFirst().payload(), xb.getFirst().payload(), name + ".", number + ".", out);
      } else if (s != null && s.map()) {
        Map<String, byte[]> ea = entries(xa);
        Map<String, byte[]> eb = entries(xb);
        java.util.TreeSet<String> keys = new java.util.TreeSet<>(ea.keySet());
        keys.addAll(eb.keySet());
        for (String k : keys) {
          if (!Arrays.equals(ea.get(k), eb.get(k))) {
            out.add(name + "[" + k + "] (field " + number + ")");
          }
        }
      } else {
        out.add(name + " (field " + number + ")");
      }
    }
  }

  private static Map<Integer, List<Field>> byNumber(List<Field> fields) {
    Map<Integer, List<Field>> m = new java.util.LinkedHashMap<>();
    fields.forEach(f -> m.computeIfAbsent(f.number(), k -> new ArrayList<>()).add(f));
    return m;
  }

  private static boolean samePayloads(List<Field> a, List<Field> b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      if (a.get(i).wire() != b.get(i).wire() || !Arrays.equals(a.get(i).payload(), b.get(i).payload())) {
        return false;
      }
    }
    return true;
  }

  /** A canonical map field's entries: key (UTF-8, as text) -> the entry's bytes. */
  private static Map<String, byte[]> entries(List<Field> occurrences) throws NotProtobuf {
    Map<String, byte[]> m = new java.util.LinkedHashMap<>();
    for (Field f : occurrences) {
      String key = "";
      for (Field inner : parse(f.buf(), f.from(), f.from() + f.size())) {
        if (inner.number() == 1) {
          key = new String(inner.payload(), java.nio.charset.StandardCharsets.UTF_8);
        }
      }
      m.put(key, f.payload());
    }
    return m;
  }

  /** Never fails: options that are not protobuf give {@code 0xff} + the bytes. */
  public static byte[] canonical(byte[] compileOptionsProto) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(compileOptionsProto.length + 1);
    try {
      canon(Msg.COMPILE_OPTIONS, compileOptionsProto, 0, compileOptionsProto.length, out, 0);
      return out.toByteArray();
    } catch (NotProtobuf e) {
      byte[] raw = new byte[compileOptionsProto.length + 1];
      raw[0] = (byte) 0xff;
      System.arraycopy(compileOptionsProto, 0, raw, 1, compileOptionsProto.length);
      return raw;
    }
  }

  private static final class NotProtobuf extends Exception {
    private static final long serialVersionUID = 1L;

    NotProtobuf() {
      super(null, null, false, false);
    }
  }

  /** One field occurrence: its payload is bytes [from, from + size) of buf. */
  private record Field(int number, int wire, int index, byte[] buf, int from, int size) {
    byte[] payload() {
      return Arrays.copyOfRange(buf, from, from + size);
    }
  }

  private static long[] varint(byte[] b, int at, int end) throws NotProtobuf {
    long v = 0;
    for (int i = 0; at + i < end && i < 10; i++) {
      v |= (long) (b[at + i] & 0x7f) << (7 * i);
      if ((b[at + i] & 0x80) == 0) {
        return new long[] {v, i + 1};
      }
    }
    throw new NotProtobuf();
  }

  private static List<Field> parse(byte[] b, int from, int end) throws NotProtobuf {
    List<Field> fields = new ArrayList<>();
    int at = from;
    while (at < end) {
      long[] tag = varint(b, at, end);
      at += (int) tag[1];
      long number = tag[0] >>> 3;
      int wire = (int) (tag[0] & 7);
      if (number == 0 || number > 0x1fffffff) {
        throw new NotProtobuf();
      }
      int valueAt = at;
      long size;
      switch (wire) {
        case 0 -> size = varint(b, at, end)[1];
        case 1 -> size = 8;
        case 5 -> size = 4;
        case 2 -> {
          long[] len = varint(b, at, end);
          at += (int) len[1];
          valueAt = at;
          if (len[0] < 0 || len[0] > end - at) {
            throw new NotProtobuf();
          }
          size = len[0];
        }
        default -> throw new NotProtobuf(); // groups and the undefined wire types 6, 7
      }
      if (size > end - at) {
        throw new NotProtobuf();
      }
      at += (int) size;
      fields.add(new Field((int) number, wire, fields.size(), b, valueAt, (int) size));
    }
    fields.sort(Comparator.comparingInt(Field::number).thenComparingInt(Field::index));
    return fields;
  }

  private static void putVarint(ByteArrayOutputStream out, long v) {
    while ((v & ~0x7fL) != 0) {
      out.write((int) ((v & 0x7f) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
  }

  private static void putField(ByteArrayOutputStream out, int number, int wire, byte[] b, int from, int size) {
    putVarint(out, ((long) number << 3) | wire);
    if (wire == 2) {
      putVarint(out, size);
    }
    out.write(b, from, size);
  }

  private static void canon(Msg m, byte[] b, int from, int end, ByteArrayOutputStream out, int depth)
      throws NotProtobuf {
    if (depth > MAX_DEPTH) {
      throw new NotProtobuf();
    }
    List<Field> fields = parse(b, from, end);
    if (m == Msg.OPTION_OVERRIDE) {
      // its oneof `value` (fields 1-4, all scalars): protobuf keeps the member written last
      int last = fields.stream().filter(f -> f.number() >= 1 && f.number() <= 4).mapToInt(Field::index).max()
          .orElse(-1);
      fields = fields.stream().filter(f -> f.number() < 1 || f.number() > 4 || f.index() == last).toList();
    }
    Map<Integer, Special> specials = SPECIALS.getOrDefault(m, Map.of());
    for (int i = 0; i < fields.size();) {
      int j = i;
      while (j < fields.size() && fields.get(j).number() == fields.get(i).number()) {
        j++;
      }
      Special s = specials.get(fields.get(i).number());
      if (m == Msg.DEBUG_OPTIONS && DEBUG_OPTIONS_DROPPED_FIELDS.contains(fields.get(i).number())) {
        // not written: see DEBUG_OPTIONS_DROPPED_FIELDS
      } else if (s != null && s.map()) {
        putMap(out, fields.get(i).number(), s.value(), fields.subList(i, j), depth);
      } else {
        for (Field f : fields.subList(i, j)) {
          if (s == null) {
            putField(out, f.number(), f.wire(), f.buf(), f.from(), f.size());
          } else {
            if (f.wire() != 2) {
              throw new NotProtobuf();
            }
            ByteArrayOutputStream sub = new ByteArrayOutputStream(f.size());
            canon(s.value(), f.buf(), f.from(), f.from() + f.size(), sub, depth + 1);
            byte[] bytes = sub.toByteArray();
            putField(out, f.number(), 2, bytes, 0, bytes.length);
          }
        }
      }
      i = j;
    }
  }

  private record Entry(byte[] key, int index, byte[] bytes) {}

  private static final Comparator<Entry> BY_KEY =
      Comparator.<Entry, byte[]>comparing(Entry::key, Arrays::compareUnsigned).thenComparingInt(Entry::index);

  private static void putMap(ByteArrayOutputStream out, int number, Msg valueMsg, List<Field> occurrences,
      int depth) throws NotProtobuf {
    List<Entry> entries = new ArrayList<>();
    for (Field f : occurrences) {
      if (f.wire() != 2) {
        throw new NotProtobuf();
      }
      byte[] key = new byte[0];
      ByteArrayOutputStream e = new ByteArrayOutputStream(f.size());
      for (Field inner : parse(f.buf(), f.from(), f.from() + f.size())) {
        if (inner.number() == 1) {
          if (inner.wire() != 2) { // every map of the table has string keys; see options.c
            throw new NotProtobuf();
          }
          key = inner.payload();
          putField(e, 1, inner.wire(), inner.buf(), inner.from(), inner.size());
        } else if (inner.number() == 2 && valueMsg != Msg.PLAIN) {
          if (inner.wire() != 2) {
            throw new NotProtobuf();
          }
          ByteArrayOutputStream sub = new ByteArrayOutputStream(inner.size());
          canon(valueMsg, inner.buf(), inner.from(), inner.from() + inner.size(), sub, depth + 1);
          byte[] bytes = sub.toByteArray();
          putField(e, 2, 2, bytes, 0, bytes.length);
        } else {
          putField(e, inner.number(), inner.wire(), inner.buf(), inner.from(), inner.size());
        }
      }
      entries.add(new Entry(key, entries.size(), e.toByteArray()));
    }
    entries.sort(BY_KEY);
    for (int i = 0; i < entries.size(); i++) {
      if (i + 1 < entries.size() && Arrays.equals(entries.get(i).key(), entries.get(i + 1).key())) {
        continue; // of equal keys the last occurrence wins
      }
      byte[] bytes = entries.get(i).bytes();
      putField(out, number, 2, bytes, 0, bytes.length);
    }
  }
}
