package dev.xlac.hlo;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One message type of our schema as flat tables, for the wire-level readers: its fields in
 * field-number order with their value kinds, which are repeated, maps or oneof members, which are
 * left out of the canonical form, and each message field's schema.
 *
 * <p>The tables are read once ({@link Shipped}) from {@value #RESOURCE}, a text file that {@code WireSchemaSource}
 * (in the tests) renders from the generated descriptors ({@code WireSchemaTest} checks that it is current). This
 * class references no protobuf class, so a command that only fingerprints never loads protobuf's
 * descriptors: that took about 120 ms of every cold start.
 */
final class WireSchema {
  // Value kinds.
  static final byte INT32 = 1;
  static final byte INT64 = 2;
  static final byte UINT32 = 3;
  static final byte UINT64 = 4;
  static final byte SINT32 = 5;
  static final byte SINT64 = 6;
  static final byte BOOL = 7;
  static final byte ENUM = 8;
  static final byte FIXED32 = 9;
  static final byte SFIXED32 = 10;
  static final byte FIXED64 = 11;
  static final byte SFIXED64 = 12;
  static final byte FLOAT = 13;
  static final byte DOUBLE = 14;
  static final byte STRING = 15;
  static final byte BYTES = 16;
  static final byte MESSAGE = 17;
  /** The kinds' names in {@value #RESOURCE}, indexed by kind. */
  static final String[] KIND_NAMES = {null, "int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool",
      "enum", "fixed32", "sfixed32", "fixed64", "sfixed64", "float", "double", "string", "bytes", "message"};

  // Roles: types whose canonical form has rules of its own (hlo/README.md).
  static final int OTHER = 0;
  static final int MODULE = 1;
  static final int COMPUTATION = 2;
  static final int INSTRUCTION = 3;
  static final int SHAPE = 4;
  static final int LAYOUT = 5;
  static final int MAP_ENTRY = 6;
  /** The roles' names in {@value #RESOURCE}, indexed by role. */
  static final String[] ROLE_NAMES = {"other", "module", "computation", "instruction", "shape", "layout",
      "map-entry"};

  /** The tables, on the class path next to this class. */
  static final String RESOURCE = "wire-schema.txt";

  // Wire types.
  static final int WT_VARINT = 0;
  static final int WT_FIXED64 = 1;
  static final int WT_LEN = 2;
  static final int WT_START_GROUP = 3;
  static final int WT_END_GROUP = 4;
  static final int WT_FIXED32 = 5;

  final String name;
  final int role;
  final int[] numbers;
  final byte[] kinds;
  final boolean[] repeated;
  final boolean[] map;
  /** Oneof (real or synthetic) index per field, or -1: such fields count as present once set. */
  final int[] oneof;
  /** Left out of the canonical form (names, ids, debug types...). */
  final boolean[] skip;
  final WireSchema[] children;
  private final int[] dense;

  /** A schema with no fields: the content of an unknown group. */
  static final WireSchema EMPTY = new WireSchema("(group)", OTHER, 0);

  /**
   * The tables loaded from {@value #RESOURCE}, once, on first use. A holder of its own, so that
   * {@code WireSchemaSource} (in the tests) can build and render tables even when the shipped file is stale or
   * broken (that is how it is regenerated).
   */
  static final class Shipped {
    static final WireSchema HLO_SNAPSHOT;
    static final WireSchema HLO_PROTO;
    static final WireSchema HLO_MODULE;
    static final WireSchema HLO_COMPUTATION;
    static final WireSchema HLO_INSTRUCTION;
    static final WireSchema SHAPE_SCHEMA;
    /** PrimitiveType numbers that name array types (known to this build, not TUPLE, TOKEN, OPAQUE or INVALID). */
    static final boolean[] ARRAY_TYPES;

    static {
      Tables t;
      try (InputStream in = WireSchema.class.getResourceAsStream(RESOURCE)) {
        if (in == null) {
          throw new IllegalStateException("the resource " + RESOURCE + " is missing from the build");
        }
        t = parse(in.readAllBytes());
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read the resource " + RESOURCE, e);
      }
      HLO_SNAPSHOT = t.type("xla.HloSnapshot");
      HLO_PROTO = t.type("xla.HloProto");
      HLO_MODULE = t.type("xla.HloModuleProto");
      HLO_COMPUTATION = t.type("xla.HloComputationProto");
      HLO_INSTRUCTION = t.type("xla.HloInstructionProto");
      SHAPE_SCHEMA = t.type("xla.ShapeProto");
      ARRAY_TYPES = t.arrayTypes();
    }

    private Shipped() {}
  }

  /** Every message type by full name, in the order of the resource, and the array types by PrimitiveType number. */
  record Tables(Map<String, WireSchema> types, boolean[] arrayTypes) {
    WireSchema type(String fullName) {
      WireSchema s = types.get(fullName);
      if (s == null) {
        throw new IllegalStateException(RESOURCE + " has no message type " + fullName);
      }
      return s;
    }
  }

  WireSchema(String name, int role, int n) {
    this.name = name;
    this.role = role;
    numbers = new int[n];
    kinds = new byte[n];
    repeated = new boolean[n];
    map = new boolean[n];
    oneof = new int[n];
    skip = new boolean[n];
    children = new WireSchema[n];
    dense = new int[n == 0 ? 0 : 129];
  }

  /** Sets field {@code i}; fields are set in ascending number order. */
  void setField(int i, int number, byte kind, boolean repeated, boolean map, int oneof, boolean skip) {
    if (number < 1 || i > 0 && number <= numbers[i - 1]) {
      throw new IllegalStateException(name + ": field numbers must ascend, got " + number);
    }
    numbers[i] = number;
    if (number < dense.length) {
      dense[number] = i + 1;
    }
    kinds[i] = kind;
    this.repeated[i] = repeated;
    this.map[i] = map;
    this.oneof[i] = oneof;
    this.skip[i] = skip;
  }

  static boolean isArrayType(int elementType) {
    boolean[] arrayTypes = Shipped.ARRAY_TYPES;
    return elementType >= 0 && elementType < arrayTypes.length && arrayTypes[elementType];
  }

  int size() {
    return numbers.length;
  }

  /** The index of the field with this number, or -1 if this schema does not know it. */
  int indexOf(int number) {
    if (number < dense.length) {
      return dense[number] - 1;
    }
    return Math.max(-1, Arrays.binarySearch(numbers, number));
  }

  int indexOfNumber(int number) {
    int i = indexOf(number);
    if (i < 0) {
      throw new IllegalStateException(name + " has no field " + number);
    }
    return i;
  }

  /** Whether a field arriving with this wire type is read as the field (otherwise it is an unknown field). */
  boolean accepts(int i, int wireType) {
    int expected = wireTypeOf(kinds[i]);
    return wireType == expected || (repeated[i] && wireType == WT_LEN && isPackable(kinds[i]));
  }

  static boolean isPackable(byte kind) {
    return kind < STRING;
  }

  static int wireTypeOf(byte kind) {
    return switch (kind) {
      case FIXED32, SFIXED32, FLOAT -> WT_FIXED32;
      case FIXED64, SFIXED64, DOUBLE -> WT_FIXED64;
      case STRING, BYTES, MESSAGE -> WT_LEN;
      default -> WT_VARINT;
    };
  }

  /** Varint kinds read as 32 bits on the wire (a longer varint is malformed for them). */
  static boolean isVarint32(byte kind) {
    return kind == INT32 || kind == UINT32 || kind == SINT32 || kind == ENUM;
  }

  /**
   * Reads the tables in the format that {@code WireSchemaSource.render} (in the tests) writes (ASCII): comment
   * lines ({@code #}), {@code array-type NUMBER NAME} lines, and per message type a line
   * {@code message FULL_NAME ROLE FIELD_COUNT} followed by one line per field, indented by two
   * spaces, in ascending number order: {@code NUMBER KIND FLAGS ONEOF CHILD NAME}, where FLAGS is
   * {@code -} or a comma-separated subset of {@code repeated,map,skip}, ONEOF is {@code -} or an
   * index, CHILD is {@code -} or a message type's full name, and NAME (the field's name) is there
   * for the reader only.
   *
   * <p>It scans the bytes itself rather than through a Reader and {@code String.split}: this runs
   * interpreted in every cold start, and the scan takes about a third of the time.
   */
  static Tables parse(byte[] text) {
    Map<String, WireSchema> types = new LinkedHashMap<>();
    Map<WireSchema, String[]> childNames = new HashMap<>();
    boolean[] arrayTypes = new boolean[0];
    WireSchema current = null;
    String[] currentChildren = null;
    int next = 0;
    int lineNumber = 0;
    int[] words = new int[14]; // start, end of up to 7 words
    for (int start = 0, end; start < text.length; start = end + 1) {
      end = start;
      while (end < text.length && text[end] != '\n') {
        end++;
      }
      lineNumber++;
      if (end == start || text[start] == '#') {
        continue;
      }
      try {
        boolean field = end - start > 2 && text[start] == ' ' && text[start + 1] == ' ';
        int n = split(text, field ? start + 2 : start, end, words);
        if (field) {
          if (current == null || next == current.size() || n != 6) {
            throw new IllegalArgumentException("unexpected field line");
          }
          boolean repeated = false;
          boolean map = false;
          boolean skip = false;
          if (!is(text, words, 2, "-")) {
            for (int from = words[4], to; from < words[5]; from = to + 1) {
              to = from;
              while (to < words[5] && text[to] != ',') {
                to++;
              }
              String flag = new String(text, from, to - from, StandardCharsets.ISO_8859_1);
              switch (flag) {
                case "repeated" -> repeated = true;
                case "map" -> map = true;
                case "skip" -> skip = true;
                default -> throw new IllegalArgumentException("unknown flag " + flag);
              }
            }
          }
          byte kind = (byte) indexOfName(KIND_NAMES, word(text, words, 1));
          current.setField(next, number(text, words, 0), kind, repeated, map,
              is(text, words, 3, "-") ? -1 : number(text, words, 3), skip);
          if ((kind == MESSAGE) == is(text, words, 4, "-")) {
            throw new IllegalArgumentException("a message field needs a child type, and only a message field");
          }
          currentChildren[next++] = kind == MESSAGE ? word(text, words, 4) : null;
        } else if (n == 4 && is(text, words, 0, "message")) {
          checkComplete(current, next);
          current = new WireSchema(word(text, words, 1), indexOfName(ROLE_NAMES, word(text, words, 2)),
              number(text, words, 3));
          if (types.putIfAbsent(current.name, current) != null) {
            throw new IllegalArgumentException("duplicate message type " + current.name);
          }
          currentChildren = new String[current.size()];
          childNames.put(current, currentChildren);
          next = 0;
        } else if (n == 3 && is(text, words, 0, "array-type")) {
          int number = number(text, words, 1);
          if (number >= arrayTypes.length) {
            arrayTypes = Arrays.copyOf(arrayTypes, number + 1);
          }
          arrayTypes[number] = true;
        } else {
          throw new IllegalArgumentException("unexpected line");
        }
      } catch (RuntimeException e) {
        throw new IllegalStateException(RESOURCE + " line " + lineNumber + ": " + e.getMessage() + ": "
            + new String(text, start, end - start, StandardCharsets.UTF_8), e);
      }
    }
    try {
      checkComplete(current, next);
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException(RESOURCE + ": " + e.getMessage(), e);
    }
    Tables tables = new Tables(types, arrayTypes);
    for (Map.Entry<WireSchema, String[]> e : childNames.entrySet()) {
      String[] names = e.getValue();
      for (int i = 0; i < names.length; i++) {
        if (names[i] != null) {
          e.getKey().children[i] = tables.type(names[i]);
        }
      }
    }
    return tables;
  }

  /** Splits {@code text[from, to)} at single spaces into {@code words} (start, end pairs); returns the word count. */
  private static int split(byte[] text, int from, int to, int[] words) {
    int n = 0;
    for (int i = from; i <= to; n++) {
      if (n == words.length / 2) {
        throw new IllegalArgumentException("too many words");
      }
      int j = i;
      while (j < to && text[j] != ' ') {
        j++;
      }
      if (j == i) {
        throw new IllegalArgumentException("empty word");
      }
      words[2 * n] = i;
      words[2 * n + 1] = j;
      i = j + 1;
    }
    return n;
  }

  private static String word(byte[] text, int[] words, int w) {
    return new String(text, words[2 * w], words[2 * w + 1] - words[2 * w], StandardCharsets.ISO_8859_1);
  }

  private static boolean is(byte[] text, int[] words, int w, String expected) {
    int from = words[2 * w];
    if (words[2 * w + 1] - from != expected.length()) {
      return false;
    }
    for (int i = 0; i < expected.length(); i++) {
      if (text[from + i] != expected.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  private static int number(byte[] text, int[] words, int w) {
    int value = 0;
    int from = words[2 * w];
    int to = words[2 * w + 1];
    for (int i = from; i < to; i++) {
      int digit = text[i] - '0';
      if (digit < 0 || digit > 9 || i - from >= 9) {
        throw new IllegalArgumentException("not a number: " + word(text, words, w));
      }
      value = value * 10 + digit;
    }
    return value;
  }

  private static void checkComplete(WireSchema s, int fieldsRead) {
    if (s != null && fieldsRead != s.size()) {
      throw new IllegalArgumentException(s.name + " declares " + s.size() + " fields but lists " + fieldsRead);
    }
  }

  private static int indexOfName(String[] names, String name) {
    for (int i = 0; i < names.length; i++) {
      if (name.equals(names[i])) {
        return i;
      }
    }
    throw new IllegalArgumentException("unknown name " + name);
  }
}
