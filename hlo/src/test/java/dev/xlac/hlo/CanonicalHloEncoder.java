package dev.xlac.hlo;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Internal;
import com.google.protobuf.Message;
import com.google.protobuf.UnknownFieldSet;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.XlaDataProtos.LayoutProto;
import dev.xlac.hlo.proto.XlaDataProtos.NamedShardingProto;
import dev.xlac.hlo.proto.XlaDataProtos.OpMetadata;
import dev.xlac.hlo.proto.XlaDataProtos.OpSharding;
import dev.xlac.hlo.proto.XlaDataProtos.OriginalValueProto;
import dev.xlac.hlo.proto.XlaDataProtos.PrimitiveType;
import dev.xlac.hlo.proto.XlaDataProtos.ProgramShapeProto;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import dev.xlac.hlo.proto.XlaDataProtos.StatisticsViz;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The object-model canonical encoder that production used before the streaming one
 * ({@link CanonicalWireEncoder}); kept in the tests as the oracle that the streaming encoder must
 * match byte for byte, because users' caches are keyed by its fingerprints.
 *
 * <p>Writes the canonical form of an HLO module (specified in hlo/README.md) into a sink.
 *
 * <p>Every message is written as its present fields in field-number order, each as its number
 * followed by its value, then its unknown fields by their wire values, then an end marker. A few
 * fields are left out (ids, names, debug metadata) and a few are rewritten (id references become
 * canonical indices, channel ids are renumbered by first use, equivalent layouts are normalised).
 * Anything not named here, including fields this build's schema does not know, is kept.
 */
final class CanonicalHloEncoder {
  // The end marker and the value kinds written after an unknown field's negated number are the
  // production encoder's codes: they are the format (hlo/README.md), not something to check twice.
  private static final int END = CanonicalWireEncoder.END;
  private static final int UNKNOWN_VARINT = CanonicalWireEncoder.UNKNOWN_VARINT;
  private static final int UNKNOWN_FIXED32 = CanonicalWireEncoder.UNKNOWN_FIXED32;
  private static final int UNKNOWN_FIXED64 = CanonicalWireEncoder.UNKNOWN_FIXED64;
  private static final int UNKNOWN_BYTES = CanonicalWireEncoder.UNKNOWN_BYTES;
  private static final int UNKNOWN_GROUP = CanonicalWireEncoder.UNKNOWN_GROUP;

  // Field numbers (XLA's schema). Module:
  private static final int MODULE_NAME = 1;
  private static final int MODULE_ENTRY_NAME = 2;
  private static final int MODULE_COMPUTATIONS = 3;
  private static final int MODULE_ID = 5;
  private static final int MODULE_ENTRY_ID = 6;
  private static final int MODULE_SCHEDULE = 7;
  private static final int MODULE_PROFILE_INFO = 13;
  private static final int MODULE_STACK_FRAMES = 17;
  private static final int MODULE_ORIGINAL_VALUE_RECOVERY = 20;
  // Computation:
  private static final int COMP_NAME = 1;
  private static final int COMP_INSTRUCTIONS = 2;
  private static final int COMP_ID = 5;
  private static final int COMP_ROOT_ID = 6;
  // Instruction:
  private static final int INSTR_NAME = 1;
  private static final int INSTR_METADATA = 7;
  private static final int INSTR_CHANNEL_ID = 26;
  private static final int INSTR_ID = 35;
  private static final int INSTR_OPERAND_IDS = 36;
  private static final int INSTR_CONTROL_PREDECESSOR_IDS = 37;
  private static final int INSTR_CALLED_COMPUTATION_IDS = 38;
  private static final int INSTR_ALL_REDUCE_ID = 45;
  private static final int INSTR_STATISTICS_VIZ = 82;
  private static final int INSTR_ORIGINAL_VALUE = 88;
  // Shapes and layouts, from the generated classes (the streaming encoder keeps its own numbers):
  private static final int SHAPE_LAYOUT = ShapeProto.LAYOUT_FIELD_NUMBER;
  private static final int SHAPE_IS_DYNAMIC_DIMENSION = ShapeProto.IS_DYNAMIC_DIMENSION_FIELD_NUMBER;
  private static final int LAYOUT_MINOR_TO_MAJOR = LayoutProto.MINOR_TO_MAJOR_FIELD_NUMBER;
  private static final int LAYOUT_DIM_LEVEL_TYPES = LayoutProto.DIM_LEVEL_TYPES_FIELD_NUMBER;
  private static final int LAYOUT_DIM_UNIQUE = LayoutProto.DIM_UNIQUE_FIELD_NUMBER;
  private static final int LAYOUT_DIM_ORDERED = LayoutProto.DIM_ORDERED_FIELD_NUMBER;
  private static final int LAYOUT_TAIL_PADDING_ALIGNMENT = LayoutProto.TAIL_PADDING_ALIGNMENT_IN_ELEMENTS_FIELD_NUMBER;
  private static final int PROGRAM_SHAPE_PARAMETER_NAMES = 3;
  private static final int OP_SHARDING_METADATA = 7;
  private static final int NAMED_SHARDING_METADATA = 6;

  private static final Descriptor SHAPE = ShapeProto.getDescriptor();
  private static final Descriptor LAYOUT = LayoutProto.getDescriptor();
  private static final Descriptor PROGRAM_SHAPE = ProgramShapeProto.getDescriptor();
  private static final Descriptor OP_SHARDING = OpSharding.getDescriptor();
  private static final Descriptor NAMED_SHARDING = NamedShardingProto.getDescriptor();
  /** Message types that are debug information wherever they appear. */
  private static final List<Descriptor> DEBUG_TYPES =
      List.of(OpMetadata.getDescriptor(), StatisticsViz.getDescriptor(), OriginalValueProto.getDescriptor());

  private static final Map<Descriptor, FieldDescriptor[]> FIELDS_BY_NUMBER = new ConcurrentHashMap<>();

  private final CanonicalSink out;
  private final Map<Long, Integer> channels = new HashMap<>();

  CanonicalHloEncoder(CanonicalSink out) {
    this.out = out;
  }

  /** The fingerprint as the object-model path computes it. */
  static GraphFingerprint fingerprint(HloModuleProto module) {
    try {
      CanonicalSink.Digest sink = new CanonicalSink.Digest(java.security.MessageDigest.getInstance("SHA-256"));
      sink.raw(GraphFingerprint.DOMAIN);
      new CanonicalHloEncoder(sink).module(HloGraph.of(module));
      return new GraphFingerprint(GraphFingerprint.VERSION + ":" + java.util.HexFormat.of().formatHex(sink.finish()));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The canonical bytes as the object-model path writes them (for diagnosing a mismatch). */
  static byte[] canonicalBytes(HloModuleProto module) {
    CanonicalSink.Memory mem = new CanonicalSink.Memory();
    new CanonicalHloEncoder(mem).module(HloGraph.of(module));
    return mem.toByteArray();
  }

  void module(HloGraph graph) {
    HloModuleProto m = graph.module();
    for (FieldDescriptor f : fieldsByNumber(m.getDescriptorForType())) {
      switch (f.getNumber()) {
        case MODULE_NAME, MODULE_ENTRY_NAME, MODULE_ID, MODULE_SCHEDULE, MODULE_PROFILE_INFO, MODULE_STACK_FRAMES,
            MODULE_ORIGINAL_VALUE_RECOVERY -> { }
        case MODULE_COMPUTATIONS -> {
          out.i32(MODULE_COMPUTATIONS);
          out.i32(graph.computations().size());
          for (int k = 0; k < graph.computations().size(); k++) {
            computation(graph, k);
          }
        }
        case MODULE_ENTRY_ID -> {
          out.i32(MODULE_ENTRY_ID);
          out.i32(graph.entryIndex());
        }
        default -> field(m, f);
      }
    }
    unknown(m.getUnknownFields());
    out.i32(END);
  }

  private void computation(HloGraph graph, int k) {
    HloComputationProto c = graph.computations().get(k);
    for (FieldDescriptor f : fieldsByNumber(c.getDescriptorForType())) {
      switch (f.getNumber()) {
        case COMP_NAME, COMP_ID -> { }
        case COMP_INSTRUCTIONS -> {
          List<HloInstructionProto> instructions = graph.instructions(k);
          out.i32(COMP_INSTRUCTIONS);
          out.i32(instructions.size());
          for (HloInstructionProto in : instructions) {
            instruction(graph, k, in);
          }
        }
        case COMP_ROOT_ID -> {
          out.i32(COMP_ROOT_ID);
          out.i32(graph.rootIndex(k));
        }
        default -> field(c, f);
      }
    }
    unknown(c.getUnknownFields());
    out.i32(END);
  }

  private void instruction(HloGraph graph, int k, HloInstructionProto in) {
    for (FieldDescriptor f : fieldsByNumber(in.getDescriptorForType())) {
      switch (f.getNumber()) {
        case INSTR_NAME, INSTR_METADATA, INSTR_ID, INSTR_STATISTICS_VIZ, INSTR_ORIGINAL_VALUE -> { }
        case INSTR_OPERAND_IDS -> {
          if (in.getOperandIdsCount() > 0) {
            out.i32(INSTR_OPERAND_IDS);
            out.i32(in.getOperandIdsCount());
            for (long id : in.getOperandIdsList()) {
              out.i32(graph.instructionIndex(k, id));
            }
          }
        }
        case INSTR_CONTROL_PREDECESSOR_IDS -> {
          if (in.getControlPredecessorIdsCount() > 0) {
            // A set: order carries no meaning.
            int[] idx = in.getControlPredecessorIdsList().stream().mapToInt(id -> graph.instructionIndex(k, id))
                .sorted().distinct().toArray();
            out.i32(INSTR_CONTROL_PREDECESSOR_IDS);
            out.i32(idx.length);
            for (int i : idx) {
              out.i32(i);
            }
          }
        }
        case INSTR_CALLED_COMPUTATION_IDS -> {
          if (in.getCalledComputationIdsCount() > 0) {
            out.i32(INSTR_CALLED_COMPUTATION_IDS);
            out.i32(in.getCalledComputationIdsCount());
            for (long id : in.getCalledComputationIdsList()) {
              out.i32(graph.computationIndex(id));
            }
          }
        }
        case INSTR_CHANNEL_ID, INSTR_ALL_REDUCE_ID -> {
          if (in.hasField(f)) {
            // Channels pair up collectives; only which instructions share one matters.
            long channel = ((Number) in.getField(f)).longValue();
            out.i32(f.getNumber());
            out.i32(channels.computeIfAbsent(channel, c -> channels.size() + 1));
          }
        }
        default -> field(in, f);
      }
    }
    unknown(in.getUnknownFields());
    out.i32(END);
  }

  /** A message of any other type, with the type-specific normalisations. */
  private void message(Message m) {
    Descriptor d = m.getDescriptorForType();
    if (d == SHAPE) {
      shape(m);
      return;
    }
    for (FieldDescriptor f : fieldsByNumber(d)) {
      if (d == LAYOUT && isDefaultLayoutField(m, f)) {
        continue;
      }
      if ((d == PROGRAM_SHAPE && f.getNumber() == PROGRAM_SHAPE_PARAMETER_NAMES)
          || (d == OP_SHARDING && f.getNumber() == OP_SHARDING_METADATA)
          || (d == NAMED_SHARDING && f.getNumber() == NAMED_SHARDING_METADATA)) {
        continue;
      }
      field(m, f);
    }
    unknown(m.getUnknownFields());
    out.i32(END);
  }

  /**
   * Shapes: an absent layout on an array shape is written as XLA's default layout (major-to-minor
   * order), and an all-false is_dynamic_dimension list as no list.
   */
  private void shape(Message m) {
    ShapeProto s = (ShapeProto) m;
    for (FieldDescriptor f : fieldsByNumber(SHAPE)) {
      switch (f.getNumber()) {
        case SHAPE_IS_DYNAMIC_DIMENSION -> {
          if (s.getIsDynamicDimensionList().contains(Boolean.TRUE)) {
            field(s, f);
          }
        }
        case SHAPE_LAYOUT -> {
          if (s.hasLayout()) {
            field(s, f);
          } else if (isArray(s)) {
            out.i32(SHAPE_LAYOUT);
            out.i32(LAYOUT_MINOR_TO_MAJOR);
            out.i32(s.getDimensionsCount());
            for (int i = s.getDimensionsCount() - 1; i >= 0; i--) {
              out.i64(i);
            }
            out.i32(END);
          }
        }
        default -> field(s, f);
      }
    }
    unknown(s.getUnknownFields());
    out.i32(END);
  }

  private static boolean isArray(ShapeProto s) {
    PrimitiveType t = s.getElementType();
    return t != PrimitiveType.TUPLE && t != PrimitiveType.TOKEN && t != PrimitiveType.OPAQUE_TYPE
        && t != PrimitiveType.PRIMITIVE_TYPE_INVALID && t != PrimitiveType.UNRECOGNIZED;
  }

  /** Layout fields whose value means the same as leaving them out. */
  private static boolean isDefaultLayoutField(Message m, FieldDescriptor f) {
    LayoutProto l = (LayoutProto) m;
    return switch (f.getNumber()) {
      case LAYOUT_TAIL_PADDING_ALIGNMENT -> l.getTailPaddingAlignmentInElements() <= 1;
      case LAYOUT_DIM_LEVEL_TYPES -> l.getDimLevelTypesValueList().stream().allMatch(v -> v == 0);
      case LAYOUT_DIM_UNIQUE -> !l.getDimUniqueList().contains(Boolean.FALSE);
      case LAYOUT_DIM_ORDERED -> !l.getDimOrderedList().contains(Boolean.FALSE);
      default -> false;
    };
  }

  private void field(Message m, FieldDescriptor f) {
    if (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE && DEBUG_TYPES.contains(f.getMessageType())) {
      return;
    }
    if (f.isRepeated()) {
      int n = m.getRepeatedFieldCount(f);
      if (n == 0) {
        return;
      }
      out.i32(f.getNumber());
      out.i32(n);
      if (f.isMapField()) {
        mapEntries(m, f);
      } else {
        repeated(f, m.getField(f));
      }
    } else if (m.hasField(f)) {
      out.i32(f.getNumber());
      value(f, m.getField(f));
    }
  }

  /** Repeated values; packed numeric lists are read without boxing (large constants live in them). */
  private void repeated(FieldDescriptor f, Object list) {
    switch (list) {
      case Internal.FloatList l -> {
        for (int i = 0; i < l.size(); i++) {
          out.i32(Float.floatToRawIntBits(l.getFloat(i)));
        }
      }
      case Internal.DoubleList l -> {
        for (int i = 0; i < l.size(); i++) {
          out.i64(Double.doubleToRawLongBits(l.getDouble(i)));
        }
      }
      case Internal.IntList l -> {
        for (int i = 0; i < l.size(); i++) {
          out.i64(l.getInt(i));
        }
      }
      case Internal.LongList l -> {
        for (int i = 0; i < l.size(); i++) {
          out.i64(l.getLong(i));
        }
      }
      case Internal.BooleanList l -> {
        for (int i = 0; i < l.size(); i++) {
          out.u8(l.getBoolean(i) ? 1 : 0);
        }
      }
      case List<?> l -> {
        for (Object v : l) {
          value(f, v);
        }
      }
      default -> throw new IllegalStateException("unexpected repeated value " + list.getClass());
    }
  }

  private void value(FieldDescriptor f, Object v) {
    switch (f.getJavaType()) {
      case INT -> out.i64((Integer) v);
      case LONG -> out.i64((Long) v);
      case FLOAT -> out.i32(Float.floatToRawIntBits((Float) v));
      case DOUBLE -> out.i64(Double.doubleToRawLongBits((Double) v));
      case BOOLEAN -> out.u8((Boolean) v ? 1 : 0);
      case STRING -> out.string((String) v);
      case BYTE_STRING -> out.bytes((ByteString) v);
      case ENUM -> out.i64(((EnumValueDescriptor) v).getNumber());
      case MESSAGE -> message((Message) v);
    }
  }

  /** Map entries sorted by their canonical bytes: the wire order of a map is not meaningful. */
  private void mapEntries(Message m, FieldDescriptor f) {
    List<byte[]> entries = new ArrayList<>();
    for (Object e : (List<?>) m.getField(f)) {
      CanonicalSink.Memory mem = new CanonicalSink.Memory();
      new CanonicalHloEncoder(mem).message((Message) e);
      entries.add(mem.toByteArray());
    }
    entries.sort(Arrays::compareUnsigned);
    for (byte[] e : entries) {
      out.bytes(e);
    }
  }

  private void unknown(UnknownFieldSet fields) {
    if (fields.asMap().isEmpty()) {
      return;
    }
    for (Map.Entry<Integer, UnknownFieldSet.Field> e : fields.asMap().entrySet()) {
      out.i32(-e.getKey());
      UnknownFieldSet.Field v = e.getValue();
      if (!v.getVarintList().isEmpty()) {
        out.u8(UNKNOWN_VARINT);
        out.i32(v.getVarintList().size());
        v.getVarintList().forEach(out::i64);
      }
      if (!v.getFixed32List().isEmpty()) {
        out.u8(UNKNOWN_FIXED32);
        out.i32(v.getFixed32List().size());
        v.getFixed32List().forEach(out::i32);
      }
      if (!v.getFixed64List().isEmpty()) {
        out.u8(UNKNOWN_FIXED64);
        out.i32(v.getFixed64List().size());
        v.getFixed64List().forEach(out::i64);
      }
      if (!v.getLengthDelimitedList().isEmpty()) {
        out.u8(UNKNOWN_BYTES);
        out.i32(v.getLengthDelimitedList().size());
        v.getLengthDelimitedList().forEach(out::bytes);
      }
      if (!v.getGroupList().isEmpty()) {
        out.u8(UNKNOWN_GROUP);
        out.i32(v.getGroupList().size());
        for (UnknownFieldSet g : v.getGroupList()) {
          unknown(g);
          out.i32(END);
        }
      }
    }
  }

  private static FieldDescriptor[] fieldsByNumber(Descriptor d) {
    return FIELDS_BY_NUMBER.computeIfAbsent(d, x -> x.getFields().stream()
        .sorted(Comparator.comparingInt(FieldDescriptor::getNumber)).toArray(FieldDescriptor[]::new));
  }
}
