package dev.xlac.hlo;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.ExtensionRegistryLite;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.UnknownFieldSet;
import com.google.protobuf.UnsafeByteOperations;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import dev.xlac.hlo.proto.HloProtos.HloSnapshot;
import dev.xlac.hlo.proto.XlaDataProtos.CollectiveDeviceListProto;
import dev.xlac.hlo.proto.XlaDataProtos.FrontendAttributes;
import dev.xlac.hlo.proto.XlaDataProtos.IotaReplicaGroupListProto;
import dev.xlac.hlo.proto.XlaDataProtos.LayoutProto;
import dev.xlac.hlo.proto.XlaDataProtos.PrimitiveType;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The streaming fingerprint (wire bytes, {@link HloWireIndex} + {@link CanonicalWireEncoder}) must
 * equal the object-model one ({@link CanonicalHloEncoder}, kept here as the oracle) for every
 * module, because users' caches are keyed by it; and both must accept and reject the same files.
 */
class StreamingFingerprintTest {

  // ---- The two paths over the same bytes ----

  /** The new path on a bare HloModuleProto's bytes: a fingerprint, or "error: " and the reason. */
  private static String streaming(byte[] bytes, HloFileKind kind) {
    try {
      return new HloModuleReader().parse(Path.of("m.pb"), kind, bytes, bytes.length).fingerprint().value();
    } catch (HloReadException e) {
      return "error: " + e.reason();
    }
  }

  /** The path before the streaming encoder: protobuf-java objects, HloGraph, CanonicalHloEncoder. */
  private static String objectModel(byte[] bytes, HloFileKind kind) {
    CodedInputStream in = UnsafeByteOperations.unsafeWrap(bytes).newCodedInput();
    in.enableAliasing(true);
    in.setRecursionLimit(HloModuleReader.RECURSION_LIMIT);
    HloModuleProto module;
    try {
      switch (kind) {
        case HLO_MODULE -> module = HloModuleProto.parseFrom(in, ExtensionRegistryLite.getEmptyRegistry());
        case HLO_PROTO -> {
          HloProto p = HloProto.parseFrom(in, ExtensionRegistryLite.getEmptyRegistry());
          if (!p.hasHloModule()) {
            return "error: not an XLA HloProto dump (it has no HLO module in field 1)";
          }
          module = p.getHloModule();
        }
        default -> {
          HloSnapshot s = HloSnapshot.parseFrom(in, ExtensionRegistryLite.getEmptyRegistry());
          if (!s.hasHlo() || !s.getHlo().hasHloModule()) {
            return "error: not an XLA HloSnapshot (it has no HLO module in field 1)";
          }
          module = s.getHlo().getHloModule();
        }
      }
    } catch (InvalidProtocolBufferException e) {
      return "error: " + HloModuleReader.protobufReason(e);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    try {
      return CanonicalHloEncoder.fingerprint(module).value();
    } catch (IllegalArgumentException e) {
      return "error: malformed HLO module: " + e.getMessage();
    }
  }

  private static void assertSameFingerprint(byte[] moduleBytes) {
    String expected = objectModel(moduleBytes, HloFileKind.HLO_MODULE);
    String actual = streaming(moduleBytes, HloFileKind.HLO_MODULE);
    if (!actual.equals(expected) && !expected.startsWith("error")) {
      // Show where the canonical streams part, to make a mismatch easy to find.
      HloModuleProto m = parse(moduleBytes);
      byte[] old = CanonicalHloEncoder.canonicalBytes(m);
      byte[] now = streamingCanonicalBytes(moduleBytes);
      int at = Arrays.mismatch(old, now);
      throw new AssertionError("streaming " + actual + " != object model " + expected + "; canonical bytes differ at "
          + at + ": old " + hex(old, at) + " new " + hex(now, at));
    }
    assertThat(actual).isEqualTo(expected);
  }

  private static String hex(byte[] b, int at) {
    int from = Math.max(0, at - 16);
    return HexFormat.of().formatHex(b, from, Math.min(b.length, at + 24));
  }

  private static byte[] streamingCanonicalBytes(byte[] moduleBytes) {
    try {
      HloWireIndex index = HloWireIndex.read(moduleBytes, 0, moduleBytes.length, HloFileKind.HLO_MODULE);
      index.validate();
      CanonicalSink.Memory mem = new CanonicalSink.Memory();
      new CanonicalWireEncoder(index, mem).module();
      return mem.toByteArray();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private static HloModuleProto parse(byte[] b) {
    try {
      return HloModuleProto.parseFrom(b);
    } catch (InvalidProtocolBufferException e) {
      throw new AssertionError(e);
    }
  }

  // ---- Real dumps ----

  static Stream<Path> goldenFiles() throws IOException {
    Path root = TestModules.golden("mlp_run1").getParent();
    List<Path> files = new ArrayList<>();
    try (Stream<Path> s = Files.walk(root)) {
      s.filter(p -> p.toString().endsWith(".hlo.pb") || p.getFileName().toString().contains(".snapshot."))
          .sorted().forEach(files::add);
    }
    assertThat(files).hasSizeGreaterThan(50);
    return files.stream();
  }

  @ParameterizedTest
  @MethodSource("goldenFiles")
  void goldenDump_streamingMatchesObjectModel(Path file) throws IOException {
    LoadedModule m = new HloModuleReader().read(file);
    byte[] bytes = Files.readAllBytes(file);
    assertThat(m.fingerprint().value()).isEqualTo(objectModel(bytes, m.kind()));
    // The module's bytes are the file's slice and parse to the same module as the whole file does.
    HloModuleProto fromFile = m.kind() == HloFileKind.HLO_SNAPSHOT
        ? HloSnapshot.parseFrom(bytes).getHlo().getHloModule() : HloProto.parseFrom(bytes).getHloModule();
    assertThat(HloModuleProto.parseFrom(m.moduleBytes())).isEqualTo(fromFile);
    assertThat(m.module()).isEqualTo(fromFile);
    assertThat(m.moduleName()).isEqualTo(fromFile.getName());
    assertSameFingerprint(fromFile.toByteArray());
  }

  // ---- Generated modules that use every field ----

  @Test
  void generatedModules_streamingMatchesObjectModel() {
    for (int seed = 0; seed < 300; seed++) {
      byte[] bytes = RandomModules.module(new Random(seed)).toByteArray();
      try {
        assertSameFingerprint(bytes);
        // The diff's reader computes the fingerprint with the canonical parts, in one pass: the same value.
        String plain = streaming(bytes, HloFileKind.HLO_MODULE);
        if (!plain.startsWith("error")) {
          assertThat(HloModuleReader.forDiff().parse(Path.of("m.pb"), HloFileKind.HLO_MODULE, bytes, bytes.length)
              .fingerprint().value()).isEqualTo(plain);
        }
      } catch (AssertionError e) {
        throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
      }
    }
  }

  @Test
  void generatedModules_sameVerdictAfterRandomCorruption() {
    // Flipped, dropped and inserted bytes: both paths accept the same files with the same
    // fingerprint, and reject the same files with the same reason.
    int rejected = 0;
    for (int seed = 0; seed < 1500; seed++) {
      Random r = new Random(seed);
      byte[] bytes = HloProto.newBuilder().setHloModule(RandomModules.module(r)).build().toByteArray();
      byte[] bad = corrupt(bytes, r);
      String expected = objectModel(bad, HloFileKind.HLO_PROTO);
      String actual = streaming(bad, HloFileKind.HLO_PROTO);
      assertThat(actual).as("seed %d", seed).isEqualTo(expected);
      rejected += expected.startsWith("error") ? 1 : 0;
    }
    assertThat(rejected).isBetween(100, 1400);
  }

  private static byte[] corrupt(byte[] b, Random r) {
    byte[] out = b.clone();
    int edits = 1 + r.nextInt(3);
    for (int e = 0; e < edits && out.length > 2; e++) {
      int at = r.nextInt(out.length);
      switch (r.nextInt(4)) {
        case 0 -> out[at] ^= (byte) (1 << r.nextInt(8));
        case 1 -> out[at] = (byte) r.nextInt(256);
        case 2 -> out = Arrays.copyOf(out, at + 1);
        default -> {
          byte[] longer = new byte[out.length + 1];
          System.arraycopy(out, 0, longer, 0, at);
          longer[at] = (byte) r.nextInt(256);
          System.arraycopy(out, at, longer, at + 1, out.length - at);
          out = longer;
        }
      }
    }
    return out;
  }

  // ---- Wire forms that builders do not write: repeats, merges, unpacked lists, oneof switches ----

  @Test
  void repeatedAndMergedFields_followProtobufSemantics() {
    HloModuleProto base = TestModules.mulAdd(2f);
    HloModuleProto.Builder b = base.toBuilder();
    HloInstructionProto.Builder add = b.getComputationsBuilder(0).getInstructionsBuilder(4);
    UnknownFieldSet.Builder extra = UnknownFieldSet.newBuilder();
    // A second opcode (the last wins), a second shape (merged), an unpacked dimension and operand.
    extra.addField(2, UnknownFieldSet.Field.newBuilder().addLengthDelimited(ByteString.copyFromUtf8("subtract")).build());
    extra.addField(3, UnknownFieldSet.Field.newBuilder().addLengthDelimited(ShapeProto.newBuilder().addDimensions(9)
        .setLayout(LayoutProto.newBuilder().setTailPaddingAlignmentInElements(1)).build().toByteString()).build());
    extra.addField(14, UnknownFieldSet.Field.newBuilder().addVarint(3).addVarint(-1L).build());
    extra.addField(36, UnknownFieldSet.Field.newBuilder().addVarint(2).build());
    // A known number with the wrong wire type stays an unknown field.
    extra.addField(9, UnknownFieldSet.Field.newBuilder().addFixed32(7).build());
    // Frontend attributes again, with a repeated key: the map keeps the last value.
    extra.addField(68, UnknownFieldSet.Field.newBuilder().addLengthDelimited(
        FrontendAttributes.newBuilder().putMap("k", "2").putMap("z", "").build().toByteString()).build());
    // Oneof: collective_device_list, then iota_collective_device_list: only the last one is set.
    extra.addField(87, UnknownFieldSet.Field.newBuilder().addLengthDelimited(
        CollectiveDeviceListProto.newBuilder().setIotaReplicaGroupList(IotaReplicaGroupListProto.newBuilder()
            .setNumDevicesPerGroup(2)).build().toByteString()).build());
    extra.addField(92, UnknownFieldSet.Field.newBuilder().addLengthDelimited(
        IotaReplicaGroupListProto.newBuilder().setNumReplicaGroups(4).build().toByteString()).build());
    // A oneof scalar set to its default still counts as set.
    extra.addField(80, UnknownFieldSet.Field.newBuilder().addVarint(0).build());
    // Channel id 0 after a real one: the last wins, and 0 means none.
    extra.addField(26, UnknownFieldSet.Field.newBuilder().addVarint(0).build());
    extra.addField(1999, UnknownFieldSet.Field.newBuilder().addGroup(UnknownFieldSet.newBuilder()
        .addField(5, UnknownFieldSet.Field.newBuilder().addFixed64(11).addVarint(3).build()).build()).build());
    add.setChannelId(7).setFrontendAttributes(FrontendAttributes.newBuilder().putMap("k", "1"))
        .setCollectiveDeviceList(CollectiveDeviceListProto.getDefaultInstance()).setUnknownFields(extra.build());
    byte[] bytes = b.build().toByteArray();
    assertSameFingerprint(bytes);
    assertThat(streaming(bytes, HloFileKind.HLO_MODULE)).isNotEqualTo(streaming(base.toByteArray(), HloFileKind.HLO_MODULE));
  }

  @Test
  void moduleFieldTwiceInADump_isMerged() {
    HloModuleProto m = TestModules.mulAdd(2f);
    HloModuleProto second = HloModuleProto.newBuilder().setName("renamed")
        .addComputations(m.getComputations(0).toBuilder().setId(99).setName("other")).build();
    byte[] a = HloProto.newBuilder().setHloModule(m).build().toByteArray();
    byte[] b = HloProto.newBuilder().setHloModule(second).build().toByteArray();
    byte[] both = new byte[a.length + b.length];
    System.arraycopy(a, 0, both, 0, a.length);
    System.arraycopy(b, 0, both, a.length, b.length);
    assertThat(streaming(both, HloFileKind.HLO_PROTO)).startsWith("hlo1:").isEqualTo(objectModel(both, HloFileKind.HLO_PROTO));
    LoadedModule loaded = new HloModuleReader().parse(Path.of("x.hlo.pb"), HloFileKind.HLO_PROTO, both, both.length);
    assertThat(loaded.moduleName()).isEqualTo("renamed");
    assertThat(loaded.module().getComputationsCount()).isEqualTo(2);
  }

  @Test
  void structuralDefects_giveTheSameMessages() {
    HloModuleProto m = TestModules.mulAdd(2f);
    List<HloModuleProto> broken = new ArrayList<>();
    broken.add(HloModuleProto.newBuilder().setName("empty").build());
    broken.add(m.toBuilder().addComputations(m.getComputations(0)).build());
    broken.add(m.toBuilder().setEntryComputationId(4242).setEntryComputationName("nope").build());
    broken.add(m.toBuilder().setEntryComputationId(4242).setEntryComputationName("").build());
    broken.add(m.toBuilder().setEntryComputationId(4242).build()); // found by name
    HloModuleProto.Builder dupInstr = m.toBuilder();
    dupInstr.getComputationsBuilder(0).getInstructionsBuilder(1).setId(1);
    broken.add(dupInstr.build());
    HloModuleProto.Builder dangling = m.toBuilder();
    dangling.getComputationsBuilder(0).getInstructionsBuilder(3).setOperandIds(1, 77).clearName();
    broken.add(dangling.build());
    HloModuleProto.Builder ctrl = m.toBuilder();
    ctrl.getComputationsBuilder(0).getInstructionsBuilder(2).addControlPredecessorIds(-5);
    broken.add(ctrl.build());
    broken.add(m.toBuilder().setComputations(0, m.getComputations(0).toBuilder().setRootId(1234)).build());
    broken.add(m.toBuilder().setComputations(0, m.getComputations(0).toBuilder().clearInstructions().clearName()).build());
    HloModuleProto.Builder call = m.toBuilder();
    call.getComputationsBuilder(0).getInstructionsBuilder(0).addCalledComputationIds(5);
    broken.add(call.build());
    for (HloModuleProto bad : broken) {
      byte[] bytes = bad.toByteArray();
      String expected = objectModel(bytes, HloFileKind.HLO_MODULE);
      assertThat(streaming(bytes, HloFileKind.HLO_MODULE)).isEqualTo(expected);
    }
    assertThat(broken.stream().map(b -> objectModel(b.toByteArray(), HloFileKind.HLO_MODULE))
        .filter(s -> s.startsWith("error: malformed HLO module: ")).count()).isEqualTo(broken.size() - 1);
  }

  @Test
  void wireDefects_giveTheSameReasons() {
    byte[][] cases = {
        {0x0a, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07}, // length past the end
        {0x0a, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x0f}, // negative length
        {0x0a, 0x04, 0x0a, 0x02, (byte) 0xc0, (byte) 0x80}, // module name: overlong UTF-8
        {0x0a, 0x05, 0x0a, 0x03, (byte) 0xed, (byte) 0xa0, (byte) 0x80}, // module name: a surrogate
        {0x00, 0x01}, // tag zero
        {0x0f, 0x01}, // wire type 7
        {0x0c}, // end-group outside a group
        {0x0b, 0x08, 0x01}, // unterminated group
        {0x0b, 0x08, 0x01, 0x14}, // group closed by another number
        {0x0b, 0x08, 0x01, 0x0c, 0x0a, 0x00}, // group closed properly, then an empty module
        {0x08, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0x0a, 0x00}, // 10-byte varint with a continuation bit
        {0x0a, 0x0b, 0x30, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}, // the same, at the end of the data
        {0x0a, 0x03, (byte) 0x8a, 0x01, 0x00}, // packed operand list... as a module field 17
    };
    for (byte[] c : cases) {
      assertThat(streaming(c, HloFileKind.HLO_PROTO)).as(HexFormat.of().formatHex(c))
          .isEqualTo(objectModel(c, HloFileKind.HLO_PROTO));
    }
  }

  @Test
  void nestingAtTheLimit_isAcceptedAndOneLevelMoreIsNot() {
    for (int levels : new int[] {94, 95, 96, 97}) {
      // dump (0) > module (1) > computation (2) > instruction (3) > shape (4) > tuple_shapes...
      byte[] inner = new byte[0];
      for (int i = 0; i < levels; i++) {
        inner = lengthDelimited(4, inner);
      }
      HloInstructionProto in = HloInstructionProto.newBuilder().setId(1).setOpcode("parameter").build();
      byte[] instr = concat(in.toByteArray(), lengthDelimited(3, inner));
      byte[] comp = concat(lengthDelimited(2, instr), HloComputationProto.newBuilder().setId(1).setRootId(1).build()
          .toByteArray());
      byte[] module = concat(lengthDelimited(3, comp), HloModuleProto.newBuilder().setEntryComputationId(1).build()
          .toByteArray());
      byte[] dump = lengthDelimited(1, module);
      assertThat(streaming(dump, HloFileKind.HLO_PROTO)).as("%d levels", levels)
          .isEqualTo(objectModel(dump, HloFileKind.HLO_PROTO));
    }
  }

  @Test
  void tupleAndTokenShapesGetNoDefaultLayout_unknownElementTypesNeither() {
    HloModuleProto m = TestModules.mulAdd(2f);
    for (int type : new int[] {PrimitiveType.TUPLE_VALUE, PrimitiveType.TOKEN_VALUE, 0, 999, PrimitiveType.F32_VALUE}) {
      HloModuleProto.Builder b = m.toBuilder();
      b.getComputationsBuilder(0).getInstructionsBuilder(4).setShape(
          ShapeProto.newBuilder().setElementTypeValue(type).addDimensions(2).addDimensions(3).addIsDynamicDimension(false));
      assertSameFingerprint(b.build().toByteArray());
    }
  }

  /**
   * Pass 2 writes a shape whose bytes it has seen before from a memo (bounded at 2,048 shapes).
   * Shapes that repeat, that differ in one byte, that overflow the memo, that are too long to
   * memoize, and tuples of them must all be written as the object model writes them.
   */
  @Test
  void repeatedShapes_memoizedShapesMatchObjectModel() {
    ShapeProto common = TestModules.f32(32, 256);
    ShapeProto noLayout = common.toBuilder().clearLayout().build();
    ShapeProto dynamic = common.toBuilder().setIsDynamicDimension(1, true).build();
    HloComputationProto.Builder c = HloComputationProto.newBuilder().setId(1).setName("main");
    c.addInstructions(HloInstructionProto.newBuilder().setId(0).setName("p").setOpcode("parameter").setShape(common));
    int n = 6000;
    for (int i = 1; i < n; i++) {
      ShapeProto shape = switch (i % 6) {
        case 0 -> common;
        case 1 -> noLayout;
        case 2 -> dynamic;
        case 3 -> TestModules.f32(i, 256); // one of thousands: fills the memo
        case 4 -> ShapeProto.newBuilder().setElementType(PrimitiveType.TUPLE).addTupleShapes(common)
            .addTupleShapes(TestModules.f32(i % 7 + 1)).build();
        default -> {
          ShapeProto.Builder big = ShapeProto.newBuilder().setElementType(PrimitiveType.TUPLE);
          for (int k = 0; k < 12; k++) {
            big.addTupleShapes(k == i % 12 ? dynamic : common); // longer than the memo takes
          }
          yield big.build();
        }
      };
      c.addInstructions(HloInstructionProto.newBuilder().setId(i).setName("op." + i).setOpcode("negate")
          .setShape(shape).addOperandIds(i - 1));
    }
    HloModuleProto m = HloModuleProto.newBuilder().setName("shapes").setEntryComputationId(1)
        .addComputations(c.setRootId(n - 1)).build();
    assertSameFingerprint(m.toByteArray());
    // A shape that differs from a memoized one in its last byte is not taken for it.
    HloModuleProto.Builder b = m.toBuilder();
    b.getComputationsBuilder(0).getInstructionsBuilder(n - 1).setShape(TestModules.f32(32, 257));
    assertSameFingerprint(b.build().toByteArray());
    assertThat(streaming(b.build().toByteArray(), HloFileKind.HLO_MODULE))
        .isNotEqualTo(streaming(m.toByteArray(), HloFileKind.HLO_MODULE));
  }

  private static byte[] lengthDelimited(int field, byte[] payload) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    writeVarint(out, (long) field << 3 | 2);
    writeVarint(out, payload.length);
    out.writeBytes(payload);
    return out.toByteArray();
  }

  private static void writeVarint(java.io.ByteArrayOutputStream out, long v) {
    while ((v & ~0x7FL) != 0) {
      out.write((int) ((v & 0x7F) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** Random modules with a valid graph and every other field of every message filled at random. */
  static final class RandomModules {
    private static final Set<Integer> MODULE_STRUCTURE = Set.of(3, 6);
    private static final Set<Integer> COMPUTATION_STRUCTURE = Set.of(2, 5, 6);
    private static final Set<Integer> INSTRUCTION_STRUCTURE = Set.of(35, 36, 37, 38);
    private static final String[] STRINGS = {"", "a", "add", "é", "\uD834\uDD1E", "jit(step)/mul", "k", "z"};

    static HloModuleProto module(Random r) {
      HloModuleProto.Builder m = HloModuleProto.newBuilder();
      fill(m, r, 0, MODULE_STRUCTURE);
      int comps = 1 + r.nextInt(3);
      long[] compIds = new long[comps];
      long nextId = r.nextBoolean() ? 0 : -50 + r.nextInt(100);
      for (int k = 0; k < comps; k++) {
        compIds[k] = r.nextInt(4) == 0 ? r.nextLong() : nextId++;
      }
      for (int k = 0; k < comps; k++) {
        HloComputationProto.Builder c = HloComputationProto.newBuilder();
        fill(c, r, 1, COMPUTATION_STRUCTURE);
        c.setId(compIds[k]);
        int n = 1 + r.nextInt(6);
        long[] ids = new long[n];
        boolean sparse = r.nextInt(3) == 0;
        for (int i = 0; i < n; i++) {
          ids[i] = sparse ? r.nextLong() : nextId++;
        }
        for (int i = 0; i < n; i++) {
          HloInstructionProto.Builder in = HloInstructionProto.newBuilder();
          fill(in, r, 2, INSTRUCTION_STRUCTURE);
          in.setId(ids[i]);
          int ops = r.nextInt(4);
          for (int o = 0; o < ops; o++) {
            in.addOperandIds(ids[r.nextInt(n)]);
          }
          if (r.nextInt(4) == 0) {
            in.addControlPredecessorIds(ids[r.nextInt(n)]).addControlPredecessorIds(ids[r.nextInt(n)]);
          }
          if (r.nextInt(3) == 0) {
            in.addCalledComputationIds(compIds[r.nextInt(comps)]);
          }
          if (r.nextInt(5) == 0) {
            in.setChannelId(r.nextInt(3));
          }
          c.addInstructions(in);
        }
        c.setRootId(ids[r.nextInt(n)]);
        m.addComputations(c);
      }
      int entry = r.nextInt(comps);
      if (r.nextInt(5) == 0) {
        m.setEntryComputationName(m.getComputations(entry).getName()).setEntryComputationId(-12345);
      } else {
        m.setEntryComputationId(compIds[entry]);
      }
      return m.build();
    }

    private static void fill(Message.Builder b, Random r, int depth, Set<Integer> exclude) {
      for (FieldDescriptor f : b.getDescriptorForType().getFields()) {
        if (exclude.contains(f.getNumber()) || r.nextInt(depth < 3 ? 3 : 6) != 0) {
          continue;
        }
        if (f.isMapField()) {
          int n = r.nextInt(4);
          for (int i = 0; i < n; i++) {
            Message.Builder e = b.newBuilderForField(f);
            FieldDescriptor key = e.getDescriptorForType().findFieldByNumber(1);
            FieldDescriptor value = e.getDescriptorForType().findFieldByNumber(2);
            if (r.nextInt(5) != 0) {
              e.setField(key, value(key, e, r, depth));
            }
            if (r.nextInt(5) != 0) {
              e.setField(value, value(value, e, r, depth));
            }
            b.addRepeatedField(f, e.build());
          }
        } else if (f.isRepeated()) {
          int n = r.nextInt(4);
          for (int i = 0; i < n; i++) {
            b.addRepeatedField(f, value(f, b, r, depth));
          }
        } else {
          b.setField(f, value(f, b, r, depth));
        }
      }
      if (r.nextInt(6) == 0) {
        b.setUnknownFields(unknown(r, depth));
      }
    }

    private static UnknownFieldSet unknown(Random r, int depth) {
      UnknownFieldSet.Builder u = UnknownFieldSet.newBuilder();
      int n = 1 + r.nextInt(3);
      for (int i = 0; i < n; i++) {
        UnknownFieldSet.Field.Builder f = UnknownFieldSet.Field.newBuilder();
        switch (r.nextInt(5)) {
          case 0 -> f.addVarint(r.nextLong());
          case 1 -> f.addFixed32(r.nextInt());
          case 2 -> f.addFixed64(r.nextLong());
          case 3 -> f.addLengthDelimited(ByteString.copyFrom(new byte[r.nextInt(5)]));
          default -> f.addGroup(depth < 4 ? unknown(r, depth + 1) : UnknownFieldSet.getDefaultInstance());
        }
        u.mergeField(1000 + r.nextInt(5), f.build());
      }
      return u.build();
    }

    private static Object value(FieldDescriptor f, Message.Builder parent, Random r, int depth) {
      return switch (f.getJavaType()) {
        case INT -> switch (r.nextInt(4)) {
          case 0 -> 0;
          case 1 -> -1 - r.nextInt(3);
          case 2 -> r.nextInt();
          default -> r.nextInt(5);
        };
        case LONG -> switch (r.nextInt(4)) {
          case 0 -> 0L;
          case 1 -> -1L - r.nextInt(3);
          case 2 -> r.nextLong();
          default -> (long) r.nextInt(5);
        };
        case FLOAT -> new float[] {0f, -0f, 1.5f, Float.intBitsToFloat(0x7fc00001), Float.NaN}[r.nextInt(5)];
        case DOUBLE -> new double[] {0d, -0d, 2.5d, Double.longBitsToDouble(0x7ff8000000000001L)}[r.nextInt(4)];
        case BOOLEAN -> r.nextBoolean();
        case STRING -> STRINGS[r.nextInt(STRINGS.length)];
        case BYTE_STRING -> r.nextInt(3) == 0 ? ByteString.EMPTY : ByteString.copyFrom(randomBytes(r));
        case ENUM -> {
          EnumDescriptor e = f.getEnumType();
          yield r.nextInt(5) == 0 ? e.findValueByNumberCreatingIfUnknown(77 + r.nextInt(3))
              : e.getValues().get(r.nextInt(e.getValues().size()));
        }
        case MESSAGE -> {
          Message.Builder b = parent.newBuilderForField(f);
          if (depth < 5) {
            fill(b, r, depth + 1, Set.of());
          }
          yield b.build();
        }
      };
    }

    private static byte[] randomBytes(Random r) {
      byte[] b = new byte[r.nextInt(9) == 0 ? 5000 : 1 + r.nextInt(12)];
      r.nextBytes(b);
      return b;
    }
  }
}
