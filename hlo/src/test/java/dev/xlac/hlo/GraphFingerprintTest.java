package dev.xlac.hlo;

import static dev.xlac.hlo.TestModules.f32;
import static dev.xlac.hlo.TestModules.mulAdd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.XlaDataProtos.FrontendAttributes;
import dev.xlac.hlo.proto.XlaDataProtos.LayoutProto;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class GraphFingerprintTest {

  private static GraphFingerprint fp(HloModuleProto m) {
    return GraphFingerprint.of(m);
  }

  private static HloModuleProto editInstruction(HloModuleProto m, String opcode, UnaryOperator<HloInstructionProto.Builder> edit) {
    HloModuleProto.Builder b = m.toBuilder();
    HloComputationProto.Builder c = b.getComputationsBuilder(0);
    for (HloInstructionProto.Builder in : c.getInstructionsBuilderList()) {
      if (in.getOpcode().equals(opcode)) {
        edit.apply(in);
      }
    }
    return b.build();
  }

  @Test
  void fingerprint_hasVersionPrefixAndHexDigest() {
    assertThat(fp(mulAdd(2f)).value()).matches("hlo1:[0-9a-f]{64}");
    assertThat(fp(mulAdd(2f)).shortForm()).hasSize(12);
  }

  @Test
  void fingerprint_ignoresIdsNamesAndSourceMetadata() {
    GraphFingerprint a = fp(mulAdd(2f, 1, "", 10));
    GraphFingerprint b = fp(mulAdd(2f, 5000, "_renamed.17", 99));
    assertThat(b).isEqualTo(a);
  }

  @Test
  void fingerprint_ignoresInstructionOrderInFile() {
    HloModuleProto m = mulAdd(2f);
    HloModuleProto.Builder b = m.toBuilder();
    List<HloInstructionProto> ins = new ArrayList<>(b.getComputations(0).getInstructionsList());
    Collections.reverse(ins);
    b.getComputationsBuilder(0).clearInstructions().addAllInstructions(ins);
    assertThat(fp(b.build())).isEqualTo(fp(m));
  }

  @Test
  void fingerprint_changesWithAConstant() {
    assertThat(fp(mulAdd(3f))).isNotEqualTo(fp(mulAdd(2f)));
    // -0.0 and 0.0 compile to different programs (signed zero survives multiplication).
    assertThat(fp(mulAdd(-0.0f))).isNotEqualTo(fp(mulAdd(0.0f)));
  }

  @Test
  void fingerprint_changesWithOperandOrder() {
    HloModuleProto swapped = editInstruction(mulAdd(2f), "add", in -> {
      long a = in.getOperandIds(0);
      long b = in.getOperandIds(1);
      return in.setOperandIds(0, b).setOperandIds(1, a);
    });
    assertThat(fp(swapped)).isNotEqualTo(fp(mulAdd(2f)));
  }

  @Test
  void fingerprint_changesWithOpcodeShapeAndLayout() {
    HloModuleProto m = mulAdd(2f);
    assertThat(fp(editInstruction(m, "add", in -> in.setOpcode("subtract")))).isNotEqualTo(fp(m));
    ShapeProto wider = f32(4).toBuilder().setDimensions(0, 8).build();
    assertThat(fp(editInstruction(m, "add", in -> in.setShape(wider)))).isNotEqualTo(fp(m));
    ShapeProto matrix = f32(2, 2);
    ShapeProto transposed = matrix.toBuilder().setLayout(LayoutProto.newBuilder().addMinorToMajor(0).addMinorToMajor(1)).build();
    assertThat(fp(editInstruction(m, "add", in -> in.setShape(matrix))))
        .isNotEqualTo(fp(editInstruction(m, "add", in -> in.setShape(transposed))));
  }

  @Test
  void fingerprint_normalisesEquivalentLayouts() {
    HloModuleProto m = editInstruction(mulAdd(2f), "add", in -> in.setShape(f32(2, 2)));
    HloModuleProto noLayout = editInstruction(m, "add", in -> in.setShape(f32(2, 2).toBuilder().clearLayout()
        .clearIsDynamicDimension()));
    HloModuleProto padded = editInstruction(m, "add", in -> in.setShape(f32(2, 2).toBuilder()
        .setLayout(f32(2, 2).getLayout().toBuilder().setTailPaddingAlignmentInElements(1)
            .addDimUnique(true).addDimUnique(true))));
    assertThat(fp(noLayout)).isEqualTo(fp(m));
    assertThat(fp(padded)).isEqualTo(fp(m));
    HloModuleProto aligned = editInstruction(m, "add", in -> in.setShape(f32(2, 2).toBuilder()
        .setLayout(f32(2, 2).getLayout().toBuilder().setTailPaddingAlignmentInElements(8))));
    assertThat(fp(aligned)).isNotEqualTo(fp(m));
  }

  @Test
  void fingerprint_keepsFrontendAttributesAndBackendConfigButNotTheirMapOrder() {
    HloModuleProto m = mulAdd(2f);
    FrontendAttributes ab = FrontendAttributes.newBuilder().putMap("a", "1").putMap("b", "2").build();
    HloModuleProto withAttrs = editInstruction(m, "add", in -> in.setFrontendAttributes(ab));
    assertThat(fp(withAttrs)).isNotEqualTo(fp(m));
    // Same map, entries inserted in the other order.
    FrontendAttributes ba = FrontendAttributes.newBuilder().putMap("b", "2").putMap("a", "1").build();
    assertThat(fp(editInstruction(m, "add", in -> in.setFrontendAttributes(ba)))).isEqualTo(fp(withAttrs));
    assertThat(fp(editInstruction(m, "add", in -> in.setBackendConfig(ByteString.copyFromUtf8("{\"x\":1}")))))
        .isNotEqualTo(fp(m));
    assertThat(fp(editInstruction(m, "add", in -> in.setCustomCallTarget("foo")))).isNotEqualTo(fp(m));
  }

  @Test
  void fingerprint_keepsUnknownFieldsByTheirWireBytes() {
    HloModuleProto m = mulAdd(2f);
    UnknownFieldSet extra = UnknownFieldSet.newBuilder()
        .addField(1999, UnknownFieldSet.Field.newBuilder().addVarint(7).build()).build();
    HloModuleProto withUnknown = editInstruction(m, "add", in -> in.setUnknownFields(extra));
    assertThat(fp(withUnknown)).isNotEqualTo(fp(m));
    UnknownFieldSet other = UnknownFieldSet.newBuilder()
        .addField(1999, UnknownFieldSet.Field.newBuilder().addVarint(8).build()).build();
    assertThat(fp(editInstruction(m, "add", in -> in.setUnknownFields(other)))).isNotEqualTo(fp(withUnknown));
  }

  @Test
  void unknownFields_surviveParseAndReserialise() throws Exception {
    UnknownFieldSet extra = UnknownFieldSet.newBuilder()
        .addField(1999, UnknownFieldSet.Field.newBuilder().addLengthDelimited(ByteString.copyFromUtf8("future")).build())
        .build();
    HloModuleProto m = editInstruction(mulAdd(2f), "add", in -> in.setUnknownFields(extra));
    byte[] wire = m.toByteArray();
    HloModuleProto parsed = HloModuleProto.parseFrom(wire);
    assertThat(parsed.toByteArray()).isEqualTo(wire);
    assertThat(fp(parsed)).isEqualTo(fp(m));
  }

  @Test
  void fingerprint_renumbersChannelsByFirstUse() {
    HloModuleProto m = editInstruction(mulAdd(2f), "multiply", in -> in.setChannelId(5));
    HloModuleProto m2 = editInstruction(m, "add", in -> in.setChannelId(5));
    HloModuleProto renumbered = editInstruction(editInstruction(m2, "multiply", in -> in.setChannelId(42)), "add",
        in -> in.setChannelId(42));
    HloModuleProto split = editInstruction(m2, "add", in -> in.setChannelId(6));
    assertThat(fp(renumbered)).isEqualTo(fp(m2));
    assertThat(fp(split)).isNotEqualTo(fp(m2));
  }

  @Test
  void fingerprint_changesWithControlDependenciesAndAliasing() {
    HloModuleProto m = mulAdd(2f);
    HloModuleProto ctrl = editInstruction(m, "constant", in -> in.addControlPredecessorIds(2));
    assertThat(fp(ctrl)).isNotEqualTo(fp(m));
    HloModuleProto aliased = m.toBuilder().setInputOutputAlias(
        dev.xlac.hlo.proto.HloProtos.HloInputOutputAliasProto.newBuilder().addEntries(
            dev.xlac.hlo.proto.HloProtos.HloInputOutputAliasProto.AliasEntryProto.newBuilder().setParameterNumber(1)))
        .build();
    assertThat(fp(aliased)).isNotEqualTo(fp(m));
  }

  @Test
  void fingerprint_dependsOnWhichComputationIsTheEntry() {
    HloModuleProto m = mulAdd(2f);
    HloComputationProto second = m.getComputations(0).toBuilder().setId(777).setName("other")
        .setInstructions(4, m.getComputations(0).getInstructions(4).toBuilder().setOpcode("subtract")).build();
    HloModuleProto both = m.toBuilder().addComputations(second).build();
    HloModuleProto otherEntry = both.toBuilder().setEntryComputationId(777).setEntryComputationName("other").build();
    assertThat(fp(otherEntry)).isNotEqualTo(fp(both));
  }

  @Test
  void graph_rejectsDanglingReferences() {
    HloModuleProto bad = editInstruction(mulAdd(2f), "add", in -> in.setOperandIds(0, 12345));
    assertThatThrownBy(() -> fp(bad)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("operand id 12345");
    HloModuleProto badCall = editInstruction(mulAdd(2f), "add", in -> in.addCalledComputationIds(999));
    assertThatThrownBy(() -> fp(badCall)).hasMessageContaining("computation id 999");
    HloModuleProto noEntry = mulAdd(2f).toBuilder().setEntryComputationId(4242).setEntryComputationName("nope").build();
    assertThatThrownBy(() -> fp(noEntry)).hasMessageContaining("entry computation");
  }

  @Test
  void fingerprint_handlesVeryLongChainsWithoutRecursion() {
    int n = 200_000;
    ShapeProto s = f32(1);
    HloComputationProto.Builder c = HloComputationProto.newBuilder().setId(1).setName("chain");
    c.addInstructions(HloInstructionProto.newBuilder().setId(0).setOpcode("parameter").setShape(s));
    for (int i = 1; i < n; i++) {
      c.addInstructions(HloInstructionProto.newBuilder().setId(i).setOpcode("negate").setShape(s).addOperandIds(i - 1));
    }
    c.setRootId(n - 1);
    HloModuleProto m = HloModuleProto.newBuilder().setEntryComputationId(1).addComputations(c).build();
    assertThat(fp(m).value()).startsWith("hlo1:");
  }

  @Test
  void prefixDigits_isTheOneRuleForFingerprintArguments() {
    assertThat(GraphFingerprint.prefixDigits(" HLO1:ABCdef12 ")).isEqualTo("abcdef12");
    assertThat(GraphFingerprint.prefixDigits("abcdef")).isEqualTo("abcdef");
    assertThat(GraphFingerprint.prefixDigits("abcde")).as("fewer than 6 digits").isNull();
    assertThat(GraphFingerprint.prefixDigits("a".repeat(65))).as("more than 64").isNull();
    assertThat(GraphFingerprint.prefixDigits("train_step")).isNull();
    assertThat(GraphFingerprint.prefixDigits("hlo2:abcdef")).isNull();
  }
}
