package dev.xlac.hlo;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.OneofDescriptor;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
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
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The definition of {@link WireSchema}'s tables: a walk over the generated descriptors of our
 * {@code .proto} schema from {@code HloSnapshot}, plus what is left out of the canonical form and
 * which types have rules of their own. {@link #render} writes the tables as the text that ships as
 * {@code dev/xlac/hlo/wire-schema.txt}; {@code WireSchemaTest} checks that the shipped file is
 * current. A test class: production code never loads it, nor protobuf's descriptors.
 */
final class WireSchemaSource {
  /** Messages of these types are debug data, left out wherever they appear. */
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

  /** PrimitiveTypes that are not array types. */
  private static final Set<PrimitiveType> NOT_ARRAYS = Set.of(PrimitiveType.TUPLE, PrimitiveType.TOKEN,
      PrimitiveType.OPAQUE_TYPE, PrimitiveType.PRIMITIVE_TYPE_INVALID);

  private WireSchemaSource() {}

  /** The tables built from the descriptors, types in depth-first order from {@code HloSnapshot}. */
  static WireSchema.Tables build() {
    Map<String, WireSchema> all = new LinkedHashMap<>();
    build(HloSnapshot.getDescriptor(), all, new LinkedHashMap<>());
    int max = 0;
    for (EnumValueDescriptor v : PrimitiveType.getDescriptor().getValues()) {
      max = Math.max(max, v.getNumber());
    }
    boolean[] arrayTypes = new boolean[max + 1];
    for (EnumValueDescriptor v : PrimitiveType.getDescriptor().getValues()) {
      arrayTypes[v.getNumber()] = !NOT_ARRAYS.contains(PrimitiveType.forNumber(v.getNumber()));
    }
    return new WireSchema.Tables(all, arrayTypes);
  }

  /** The tables as the text of {@value WireSchema#RESOURCE} (format: {@link WireSchema#parse}). */
  static String render(WireSchema.Tables tables) {
    StringBuilder out = new StringBuilder();
    out.append("# The field tables of WireSchema (hlo/README.md, \"How the fingerprint is computed\").\n");
    out.append("# Generated from hlo/src/main/proto by WireSchemaSource; do not edit. After a schema change,\n");
    out.append("# run WireSchemaTest and copy hlo/target/wire-schema.txt here, as its failure says.\n");
    out.append("#\n");
    out.append("# array-type NUMBER NAME: PrimitiveTypes that name array types\n");
    out.append("# message FULL_NAME ROLE FIELD_COUNT, then per field: NUMBER KIND FLAGS ONEOF CHILD NAME\n");
    boolean[] arrayTypes = tables.arrayTypes();
    for (int i = 0; i < arrayTypes.length; i++) {
      if (arrayTypes[i]) {
        out.append("array-type ").append(i).append(' ').append(PrimitiveType.forNumber(i).name()).append('\n');
      }
    }
    // The field names make the file reviewable; they are not part of the tables.
    Map<String, Descriptor> descriptors = new LinkedHashMap<>();
    build(HloSnapshot.getDescriptor(), new LinkedHashMap<>(), descriptors);
    for (WireSchema s : tables.types().values()) {
      Descriptor d = descriptors.get(s.name);
      out.append("message ").append(s.name).append(' ').append(WireSchema.ROLE_NAMES[s.role]).append(' ')
          .append(s.size()).append('\n');
      for (int i = 0; i < s.size(); i++) {
        StringBuilder flags = new StringBuilder();
        if (s.repeated[i]) {
          flags.append(",repeated");
        }
        if (s.map[i]) {
          flags.append(",map");
        }
        if (s.skip[i]) {
          flags.append(",skip");
        }
        out.append("  ").append(s.numbers[i]).append(' ').append(WireSchema.KIND_NAMES[s.kinds[i]]).append(' ')
            .append(flags.isEmpty() ? "-" : flags.substring(1)).append(' ')
            .append(s.oneof[i] < 0 ? "-" : Integer.toString(s.oneof[i])).append(' ')
            .append(s.children[i] == null ? "-" : s.children[i].name).append(' ')
            .append(d == null ? "?" : d.findFieldByNumber(s.numbers[i]).getName()).append('\n');
      }
    }
    return out.toString();
  }

  private static WireSchema build(Descriptor d, Map<String, WireSchema> all, Map<String, Descriptor> descriptors) {
    WireSchema existing = all.get(d.getFullName());
    if (existing != null) {
      return existing;
    }
    FieldDescriptor[] fields = d.getFields().stream().sorted(Comparator.comparingInt(FieldDescriptor::getNumber))
        .toArray(FieldDescriptor[]::new);
    int role = d == HloModuleProto.getDescriptor() ? WireSchema.MODULE
        : d == HloComputationProto.getDescriptor() ? WireSchema.COMPUTATION
        : d == HloInstructionProto.getDescriptor() ? WireSchema.INSTRUCTION
        : d == ShapeProto.getDescriptor() ? WireSchema.SHAPE
        : d == LayoutProto.getDescriptor() ? WireSchema.LAYOUT
        : d.getOptions().getMapEntry() ? WireSchema.MAP_ENTRY : WireSchema.OTHER;
    WireSchema s = new WireSchema(d.getFullName(), role, fields.length);
    all.put(d.getFullName(), s);
    descriptors.put(d.getFullName(), d);
    List<OneofDescriptor> oneofs = d.getOneofs();
    Set<Integer> skipped = SKIPPED.getOrDefault(d.getFullName(), Set.of());
    for (int i = 0; i < fields.length; i++) {
      FieldDescriptor f = fields[i];
      boolean message = f.getJavaType() == FieldDescriptor.JavaType.MESSAGE;
      // Real and synthetic (proto3 optional) oneof members count as present once set.
      int oneof = f.getRealContainingOneof() != null || f.hasPresence() && !message
          ? oneofs.indexOf(f.getContainingOneof()) : -1;
      boolean skip = skipped.contains(f.getNumber()) || message && DEBUG_TYPES.contains(f.getMessageType().getFullName());
      s.setField(i, f.getNumber(), kindOf(f), f.isRepeated(), f.isMapField(), oneof, skip);
      if (message) {
        s.children[i] = build(f.getMessageType(), all, descriptors);
      }
    }
    return s;
  }

  private static byte kindOf(FieldDescriptor f) {
    return switch (f.getType()) {
      case INT32 -> WireSchema.INT32;
      case INT64 -> WireSchema.INT64;
      case UINT32 -> WireSchema.UINT32;
      case UINT64 -> WireSchema.UINT64;
      case SINT32 -> WireSchema.SINT32;
      case SINT64 -> WireSchema.SINT64;
      case BOOL -> WireSchema.BOOL;
      case ENUM -> WireSchema.ENUM;
      case FIXED32 -> WireSchema.FIXED32;
      case SFIXED32 -> WireSchema.SFIXED32;
      case FIXED64 -> WireSchema.FIXED64;
      case SFIXED64 -> WireSchema.SFIXED64;
      case FLOAT -> WireSchema.FLOAT;
      case DOUBLE -> WireSchema.DOUBLE;
      case STRING -> WireSchema.STRING;
      case BYTES -> WireSchema.BYTES;
      case MESSAGE -> WireSchema.MESSAGE;
      case GROUP -> throw new IllegalStateException("groups are not used by XLA's schema: " + f.getFullName());
    };
  }
}
