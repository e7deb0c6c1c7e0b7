package dev.xlac.hlo;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.OneofDescriptor;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import dev.xlac.hlo.proto.HloProtos.HloSnapshot;
import dev.xlac.hlo.proto.XlaDataProtos.LayoutProto;
import dev.xlac.hlo.proto.XlaDataProtos.NamedShardingProto;
import dev.xlac.hlo.proto.XlaDataProtos.OpMetadata;
import dev.xlac.hlo.proto.XlaDataProtos.OpSharding;
import dev.xlac.hlo.proto.XlaDataProtos.OriginalValueProto;
import dev.xlac.hlo.proto.XlaDataProtos.PrimitiveType;
import dev.xlac.hlo.proto.XlaDataProtos.ProgramShapeProto;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import dev.xlac.hlo.proto.XlaDataProtos.StatisticsViz;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One message type of our schema as flat tables, for the wire-level readers: its fields in
 * field-number order with their value kinds, which are repeated, maps or oneof members, which are
 * left out of the canonical form, and each message field's schema. Built once from the generated
 * descriptors; the readers never touch descriptors or message objects per instance.
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

  // Roles: types whose canonical form has rules of its own (hlo/README.md).
  static final int OTHER = 0;
  static final int MODULE = 1;
  static final int COMPUTATION = 2;
  static final int INSTRUCTION = 3;
  static final int SHAPE = 4;
  static final int LAYOUT = 5;
  static final int MAP_ENTRY = 6;

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

  private static final Set<String> DEBUG_TYPES = Set.of(OpMetadata.getDescriptor().getFullName(),
      StatisticsViz.getDescriptor().getFullName(), OriginalValueProto.getDescriptor().getFullName());

  /** Field numbers left out per type (hlo/README.md, "What is left out"). */
  private static final Map<String, Set<Integer>> SKIPPED = Map.of(
      HloModuleProto.getDescriptor().getFullName(), Set.of(1, 2, 5, 7, 13, 17, 20),
      HloComputationProto.getDescriptor().getFullName(), Set.of(1, 5),
      HloInstructionProto.getDescriptor().getFullName(), Set.of(1, 7, 35, 82, 88),
      ProgramShapeProto.getDescriptor().getFullName(), Set.of(3),
      OpSharding.getDescriptor().getFullName(), Set.of(7),
      NamedShardingProto.getDescriptor().getFullName(), Set.of(6));

  /** A schema with no fields: the content of an unknown group. */
  static final WireSchema EMPTY = new WireSchema("(group)", OTHER, 0);

  static final WireSchema HLO_SNAPSHOT;
  static final WireSchema HLO_PROTO;
  static final WireSchema HLO_MODULE;
  static final WireSchema HLO_COMPUTATION;
  static final WireSchema HLO_INSTRUCTION;
  static final WireSchema SHAPE_SCHEMA;
  /** PrimitiveType numbers that name array types (known to this build, not TUPLE, TOKEN, OPAQUE or INVALID). */
  private static final boolean[] ARRAY_TYPES;

  static {
    Map<Descriptor, WireSchema> all = new HashMap<>();
    HLO_SNAPSHOT = build(HloSnapshot.getDescriptor(), all);
    HLO_PROTO = all.get(HloProto.getDescriptor());
    HLO_MODULE = all.get(HloModuleProto.getDescriptor());
    HLO_COMPUTATION = all.get(HloComputationProto.getDescriptor());
    HLO_INSTRUCTION = all.get(HloInstructionProto.getDescriptor());
    SHAPE_SCHEMA = all.get(ShapeProto.getDescriptor());
    int max = 0;
    for (EnumValueDescriptor v : PrimitiveType.getDescriptor().getValues()) {
      max = Math.max(max, v.getNumber());
    }
    ARRAY_TYPES = new boolean[max + 1];
    for (EnumValueDescriptor v : PrimitiveType.getDescriptor().getValues()) {
      ARRAY_TYPES[v.getNumber()] = true;
    }
    for (PrimitiveType t : List.of(PrimitiveType.TUPLE, PrimitiveType.TOKEN, PrimitiveType.OPAQUE_TYPE,
        PrimitiveType.PRIMITIVE_TYPE_INVALID)) {
      ARRAY_TYPES[t.getNumber()] = false;
    }
  }

  private WireSchema(String name, int role, int n) {
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

  static boolean isArrayType(int elementType) {
    return elementType >= 0 && elementType < ARRAY_TYPES.length && ARRAY_TYPES[elementType];
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

  private static WireSchema build(Descriptor d, Map<Descriptor, WireSchema> all) {
    WireSchema existing = all.get(d);
    if (existing != null) {
      return existing;
    }
    FieldDescriptor[] fields = d.getFields().stream().sorted(Comparator.comparingInt(FieldDescriptor::getNumber))
        .toArray(FieldDescriptor[]::new);
    int role = d == HloModuleProto.getDescriptor() ? MODULE
        : d == HloComputationProto.getDescriptor() ? COMPUTATION
        : d == HloInstructionProto.getDescriptor() ? INSTRUCTION
        : d == ShapeProto.getDescriptor() ? SHAPE
        : d == LayoutProto.getDescriptor() ? LAYOUT
        : d.getOptions().getMapEntry() ? MAP_ENTRY : OTHER;
    WireSchema s = new WireSchema(d.getFullName(), role, fields.length);
    all.put(d, s);
    List<OneofDescriptor> oneofs = d.getOneofs();
    Set<Integer> skipped = SKIPPED.getOrDefault(d.getFullName(), Set.of());
    for (int i = 0; i < fields.length; i++) {
      FieldDescriptor f = fields[i];
      s.numbers[i] = f.getNumber();
      if (f.getNumber() < s.dense.length) {
        s.dense[f.getNumber()] = i + 1;
      }
      s.kinds[i] = kindOf(f);
      s.repeated[i] = f.isRepeated();
      s.map[i] = f.isMapField();
      s.oneof[i] = f.getRealContainingOneof() != null || f.hasPresence() && f.getJavaType() != FieldDescriptor.JavaType.MESSAGE
          ? oneofs.indexOf(f.getContainingOneof()) : -1;
      s.skip[i] = skipped.contains(f.getNumber())
          || f.getJavaType() == FieldDescriptor.JavaType.MESSAGE && DEBUG_TYPES.contains(f.getMessageType().getFullName());
      if (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
        s.children[i] = build(f.getMessageType(), all);
      }
    }
    return s;
  }

  private static byte kindOf(FieldDescriptor f) {
    return switch (f.getType()) {
      case INT32 -> INT32;
      case INT64 -> INT64;
      case UINT32 -> UINT32;
      case UINT64 -> UINT64;
      case SINT32 -> SINT32;
      case SINT64 -> SINT64;
      case BOOL -> BOOL;
      case ENUM -> ENUM;
      case FIXED32 -> FIXED32;
      case SFIXED32 -> SFIXED32;
      case FIXED64 -> FIXED64;
      case SFIXED64 -> SFIXED64;
      case FLOAT -> FLOAT;
      case DOUBLE -> DOUBLE;
      case STRING -> STRING;
      case BYTES -> BYTES;
      case MESSAGE -> MESSAGE;
      case GROUP -> throw new IllegalStateException("groups are not used by XLA's schema: " + f.getFullName());
    };
  }
}
