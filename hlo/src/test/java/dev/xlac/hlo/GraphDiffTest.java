package dev.xlac.hlo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.core.Json;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.XlaDataProtos.OpSharding;
import dev.xlac.hlo.proto.XlaDataProtos.PrimitiveType;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The diff's verdict line and details, on real JAX dumps (golden/README.md) and hand-built modules. */
class GraphDiffTest {
  @TempDir
  Path tmp;

  private static final HloModuleReader READER = new HloModuleReader();

  private static LoadedModule golden(String run, String module) {
    return READER.read(TestModules.golden(run).resolve(module + ".before_optimizations.hlo.pb"));
  }

  private LoadedModule write(String name, HloModuleProto m) throws Exception {
    return READER.read(TestModules.writeDump(tmp, name + ".hlo.pb", m));
  }

  // ---- golden dumps ----

  @Test
  void identicalRuns_areTheSameProgram() {
    GraphDiff d = GraphDiff.of(golden("mlp_run1", "module_0048.jit_train_step"),
        golden("mlp_run2", "module_0048.jit_train_step"));
    assertThat(d.same()).isTrue();
    assertThat(d.verdict()).isEqualTo("same program");
    assertThat(d.kinds()).isEmpty();
  }

  @Test
  void renamedScript_isTheSameProgram_thoughNamesDiffer() {
    LoadedModule a = golden("mlp_run1", "module_0048.jit_train_step");
    LoadedModule b = golden("mlp_renamed", "module_0048.jit_update_fn");
    GraphDiff d = GraphDiff.of(a, b);
    assertThat(a.moduleName()).isNotEqualTo(b.moduleName());
    assertThat(d.verdict()).isEqualTo("same program");
    assertThat(d.a().module()).isEqualTo("jit_train_step");
    assertThat(d.b().module()).isEqualTo("jit_update_fn");
    assertThat(d.a().parameters()).isEqualTo(d.b().parameters()).hasSize(21);
  }

  @Test
  void batchSize_namesTheParameterAndTheDimension() {
    GraphDiff d = GraphDiff.of(golden("mlp_run1", "module_0044.jit_matmul"),
        golden("mlp_batch64", "module_0044.jit_matmul"));
    assertThat(d.verdict()).isEqualTo(
        "entry parameter 0: f32[32,32] -> f32[64,32] (dim 0: 32 -> 64), and 1 instruction changes shape with it");
    assertThat(d.kinds()).containsExactly(GraphDiff.Kind.PARAMETERS);
    assertThat(d.parameters()).containsExactly(new GraphDiff.ParameterChange(0, "f32[32,32]{1,0}", "f32[64,32]{1,0}",
        List.of(new GraphDiff.DimChange(0, 32, 64)), false));
    assertThat(d.matching().matched()).isTrue();
    assertThat(d.opcodeDeltas()).isEmpty();
  }

  @Test
  void batchSize_inTheTrainStep_changesTwoParametersAndTheirDependents() {
    GraphDiff d = GraphDiff.of(golden("mlp_run1", "module_0048.jit_train_step"),
        golden("mlp_batch64", "module_0048.jit_train_step"));
    assertThat(d.verdict()).startsWith("entry parameter 19: f32[32,32] -> f32[64,32] (dim 0: 32 -> 64), "
        + "entry parameter 20: s32[32] -> s32[64] (dim 0: 32 -> 64), and " + d.shapeChanges()
        + " instructions change shape with them");
    assertThat(d.shapeChanges()).isGreaterThan(10);
    assertThat(d.parameters()).extracting(GraphDiff.ParameterChange::number).containsExactly(19L, 20L);
    assertThat(d.parameters()).allSatisfy(p -> assertThat(p.dims()).containsExactly(new GraphDiff.DimChange(0, 32, 64)));
    assertThat(d.added()).isEmpty();
    assertThat(d.removed()).isEmpty();
  }

  @Test
  void oneConstant_isNamedWithItsValues() {
    GraphDiff d = GraphDiff.of(golden("mlp_run1", "module_0048.jit_train_step"),
        golden("mlp_const", "module_0048.jit_train_step"));
    assertThat(d.verdict()).isEqualTo("1 constant differs: scalar f32 1.5 -> 2.5 in the entry computation (used by 1 instruction)");
    assertThat(d.kinds()).containsExactly(GraphDiff.Kind.CONSTANTS);
    assertThat(d.constants()).containsExactly(new GraphDiff.ConstantChange(null, "f32[]", "f32[]", "1.5", "2.5", 1));
    assertThat(d.shapeChanges()).isZero();
    assertThat(d.matching().instructions()).isEqualTo(d.a().instructions());
  }

  @Test
  void unrelatedModules_cannotBeMatched_andSaySo() {
    GraphDiff d = GraphDiff.of(golden("mlp_run1", "module_0044.jit_matmul"),
        golden("mlp_run1", "module_0048.jit_train_step"));
    assertThat(d.same()).isFalse();
    assertThat(d.verdict()).startsWith("different programs whose structure cannot be matched (only ")
        .contains(" -> 437 instructions, ");
    assertThat(d.kinds()).containsExactly(GraphDiff.Kind.UNMATCHED);
    assertThat(d.matching().matched()).isFalse();
    assertThat(d.opcodeDeltas()).isNotEmpty();
  }

  private static List<Path> goldenInputs(String run) throws Exception {
    try (var files = java.nio.file.Files.list(TestModules.golden(run))) {
      return files.filter(f -> f.getFileName().toString().endsWith(".before_optimizations.hlo.pb")).sorted().toList();
    }
  }

  /** The diff reader computes the fingerprint in the same pass as the parts; it must be the fingerprint. */
  @Test
  void forDiffReader_givesTheSameFingerprints() throws Exception {
    for (String run : List.of("mlp_run1", "mlp_renamed", "mlp_batch64", "mlp_const", "gz", "snapshot")) {
      try (var files = java.nio.file.Files.list(TestModules.golden(run))) {
        for (Path f : files.filter(f -> f.getFileName().toString().contains(".pb")).toList()) {
          if (f.getFileName().toString().contains("memory-usage")) {
            continue;
          }
          assertThat(HloModuleReader.forDiff().read(f).fingerprint()).as(f.toString())
              .isEqualTo(READER.read(f).fingerprint());
        }
      }
    }
  }

  /** The opcodes the encoder saw while hashing are the ones read field by field, on every golden dump. */
  @Test
  void opcodesSeenWhileEncoding_areTheOpcodesOfTheFields() throws Exception {
    int checked = 0;
    for (String run : List.of("mlp_run1", "mlp_batch64", "gz", "snapshot")) {
      try (var files = java.nio.file.Files.list(TestModules.golden(run))) {
        for (Path f : files.filter(p -> p.getFileName().toString().contains(".pb")
            && !p.getFileName().toString().contains("memory-usage")).toList()) {
          HloWireIndex fields = READER.read(f).index();
          HloWireIndex encoded = READER.read(f).index();
          CanonicalParts parts = CanonicalParts.withFingerprint(encoded);
          HloWireIndex.Opcodes expected = fields.opcodes();
          HloWireIndex.Opcodes seen = encoded.opcodes(parts.opcodeFrom, parts.opcodeTo);
          assertThat(seen.names()).as(f.toString()).containsExactly(expected.names());
          assertThat(seen.ids()).containsExactly(expected.ids());
          checked++;
        }
      }
    }
    assertThat(checked).isGreaterThan(10);
  }

  /** Opcode deltas stay exact past the reader's table of shared opcode names (a file with hundreds of made-up ones). */
  @Test
  void opcodeDeltas_areExact_withHundredsOfDistinctOpcodes() throws Exception {
    HloModuleProto a = manyOpcodes(300, false);
    HloModuleProto b = manyOpcodes(300, true);

    GraphDiff d = GraphDiff.of(write("many_a", a), write("many_b", b));

    assertThat(d.same()).isFalse();
    assertThat(d.opcodeDeltas()).containsExactly(Map.entry("op_extra", 1));
  }

  /** {@code n} instructions with opcodes op_0 .. op_{n-1} in a chain, and one op_extra before the root if asked. */
  private static HloModuleProto manyOpcodes(int n, boolean extra) {
    ShapeProto s = TestModules.f32(4);
    HloComputationProto.Builder c = HloComputationProto.newBuilder().setId(1).setName("main");
    c.addInstructions(HloInstructionProto.newBuilder().setId(1).setName("p").setOpcode("parameter").setShape(s));
    long id = 2;
    for (int i = 0; i < n; i++, id++) {
      c.addInstructions(HloInstructionProto.newBuilder().setId(id).setName("i" + i).setOpcode("op_" + i).setShape(s)
          .addOperandIds(id - 1));
    }
    if (extra) {
      c.addInstructions(HloInstructionProto.newBuilder().setId(id).setName("x").setOpcode("op_extra").setShape(s)
          .addOperandIds(id - 1));
      id++;
    }
    return HloModuleProto.newBuilder().setName("many").setEntryComputationId(1).addComputations(c.setRootId(id - 1))
        .build();
  }

  /** A small module read for a diff keeps its own copy of the file: rewriting the file later changes nothing. */
  @Test
  void forDiffReader_keepsItsOwnCopyOfASmallFile_whenTheFileIsRewrittenAfterwards() throws Exception {
    Path golden = goldenInputs("mlp_run1").getFirst();
    Path f = tmp.resolve(golden.getFileName().toString());
    java.nio.file.Files.copy(golden, f);
    LoadedModule read = HloModuleReader.forDiff().read(f);
    byte[] before = READER.read(golden).moduleBytes();

    java.nio.file.Files.write(f, TestModules.mulAdd(2f).toByteArray());

    assertThat(read.moduleBytes()).isEqualTo(before);
    assertThat(read.module().getName()).isEqualTo(READER.read(golden).module().getName());
    assertThat(GraphDiff.of(read, HloModuleReader.forDiff().read(golden)).same()).isTrue();
  }

  /** Never the wrong verdict: "same program" exactly when the fingerprints are equal, on every golden pair. */
  @Test
  void sameProgram_exactlyWhenTheFingerprintsAreEqual_onEveryGoldenPair() throws Exception {
    List<Path> base = goldenInputs("mlp_run1");
    int same = 0;
    int different = 0;
    for (String run : List.of("mlp_run2", "mlp_renamed", "mlp_batch64", "mlp_const")) {
      List<Path> other = goldenInputs(run);
      assertThat(other).hasSameSizeAs(base);
      for (int i = 0; i < base.size(); i++) {
        LoadedModule a = HloModuleReader.forDiff().read(base.get(i));
        LoadedModule b = HloModuleReader.forDiff().read(other.get(i));
        GraphDiff d = GraphDiff.of(a, b);
        boolean equal = a.fingerprint().equals(b.fingerprint());
        assertThat(d.same()).as(other.get(i).toString()).isEqualTo(equal);
        assertThat(d.verdict().equals("same program")).as(d.verdict()).isEqualTo(equal);
        assertThat(d.kinds().isEmpty()).isEqualTo(equal);
        if (equal) {
          same++;
        } else {
          different++;
          assertThat(d.verdict()).doesNotStartWith("same program");
          assertThat(d.kinds()).doesNotContain(GraphDiff.Kind.UNLOCATED, GraphDiff.Kind.UNMATCHED);
          // The plain reader's modules give the same diff.
          assertThat(GraphDiff.of(READER.read(base.get(i)), READER.read(other.get(i))).verdict()).isEqualTo(d.verdict());
        }
      }
    }
    assertThat(same).isEqualTo(25 + 25 + 21 + 24);
    assertThat(different).isEqualTo(4 + 1);
  }

  /** Modules that set every field at random: the diff never fails, and is "same program" only with itself. */
  @Test
  void generatedModules_diffWithoutFailing_andSameOnlyWithThemselves() {
    LoadedModule previous = null;
    for (int seed = 0; seed < 60; seed++) {
      byte[] bytes = StreamingFingerprintTest.RandomModules.module(new java.util.Random(seed)).toByteArray();
      LoadedModule m;
      try {
        m = HloModuleReader.forDiff().parse(Path.of(seed + ".pb"), HloFileKind.HLO_MODULE, bytes, bytes.length);
      } catch (HloReadException e) {
        continue;  // some generated graphs are invalid on purpose
      }
      assertThat(GraphDiff.of(m, m).verdict()).isEqualTo("same program");
      if (previous != null) {
        GraphDiff d = GraphDiff.of(previous, m);
        assertThat(d.same()).isEqualTo(previous.fingerprint().equals(m.fingerprint()));
        assertThat(d.verdict()).isNotBlank();
        if (!d.same()) {
          assertThat(d.verdict()).doesNotStartWith("same program");
          assertThat(d.kinds()).isNotEmpty();
        }
      }
      previous = m;
    }
  }

  // ---- hand-built modules ----

  private static ShapeProto shape(PrimitiveType t, long... dims) {
    ShapeProto.Builder s = TestModules.f32(dims).toBuilder().setElementType(t);
    return s.build();
  }

  private static HloInstructionProto.Builder instr(long id, String op, ShapeProto s, long... operands) {
    HloInstructionProto.Builder b = HloInstructionProto.newBuilder().setId(id).setName(op + "." + id).setOpcode(op)
        .setShape(s);
    for (long o : operands) {
      b.addOperandIds(o);
    }
    return b;
  }

  private static HloModuleProto module(HloComputationProto... computations) {
    HloComputationProto entry = computations[computations.length - 1];
    HloModuleProto.Builder m = HloModuleProto.newBuilder().setName("m").setEntryComputationId(entry.getId());
    for (HloComputationProto c : computations) {
      m.addComputations(c);
    }
    return m.build();
  }

  private static HloComputationProto computation(long id, String name, long root, HloInstructionProto.Builder... in) {
    HloComputationProto.Builder c = HloComputationProto.newBuilder().setId(id).setName(name).setRootId(root);
    for (HloInstructionProto.Builder i : in) {
      c.addInstructions(i);
    }
    return c.build();
  }

  /** p0 * p1 + p1 over f32[4] (or another element type). */
  private static HloModuleProto mulAdd(PrimitiveType t, OpSharding sharding) {
    ShapeProto s = shape(t, 4);
    HloInstructionProto.Builder p1 = instr(2, "parameter", s).setParameterNumber(1);
    if (sharding != null) {
      p1.setSharding(sharding);
    }
    return module(computation(100, "main", 4, instr(1, "parameter", s).setParameterNumber(0), p1,
        instr(3, "multiply", s, 1, 2), instr(4, "add", s, 3, 2)));
  }

  @Test
  void addedInstructions_areNamedByOpcodeAndComputation() throws Exception {
    ShapeProto s = TestModules.f32(4);
    ShapeProto scalar = TestModules.f32();
    HloModuleProto b = module(
        computation(50, "sum", 53, instr(51, "parameter", scalar).setParameterNumber(0),
            instr(52, "parameter", scalar).setParameterNumber(1), instr(53, "add", scalar, 51, 52)),
        computation(100, "main", 6, instr(1, "parameter", s).setParameterNumber(0),
            instr(2, "parameter", s).setParameterNumber(1), instr(3, "multiply", s, 1, 2), instr(4, "add", s, 3, 2),
            instr(7, "constant", scalar).setLiteral(TestModules.mulAdd(0f).getComputations(0).getInstructions(2)
                .getLiteral().toBuilder().setShape(scalar).setF32S(com.google.protobuf.ByteString.copyFrom(new byte[4]))),
            instr(5, "reduce", scalar, 4, 7).addDimensions(0).addCalledComputationIds(50),
            instr(6, "add", s, 4, 5).addDimensions(0)));
    GraphDiff d = GraphDiff.of(write("a", mulAdd(PrimitiveType.F32, null)), write("b", b));
    assertThat(d.verdict()).isEqualTo("3 instructions added: a `constant`, a `reduce` and an `add` in the entry computation; "
        + "1 computation added: `sum` (3 instructions)");
    assertThat(d.kinds()).containsExactly(GraphDiff.Kind.INSTRUCTIONS, GraphDiff.Kind.COMPUTATIONS);
    assertThat(d.opcodeDeltas()).isEqualTo(Map.of("add", 2, "constant", 1, "parameter", 2, "reduce", 1));
    assertThat(d.computationsAdded()).containsExactly(new GraphDiff.ComputationDelta("sum", 3));
    assertThat(d.matching().matched()).isTrue();
    assertThat(d.matching().instructions()).isEqualTo(4);
  }

  /** p -> tanh -> exp -> negate, and the same with a layer (a constant and a multiply) inserted after tanh. */
  @Test
  void aLayerInsertedMidChain_isTwoAddedInstructions_andTheRestMatches() throws Exception {
    ShapeProto s = TestModules.f32(8);
    HloModuleProto a = module(computation(100, "main", 4, instr(1, "parameter", s).setParameterNumber(0),
        instr(2, "tanh", s, 1), instr(3, "exponential", s, 2), instr(4, "negate", s, 3)));
    HloModuleProto b = module(computation(100, "main", 4, instr(1, "parameter", s).setParameterNumber(0),
        instr(2, "tanh", s, 1),
        instr(20, "constant", s).setLiteral(dev.xlac.hlo.proto.XlaDataProtos.LiteralProto.newBuilder().setShape(s)
            .setF32S(com.google.protobuf.ByteString.copyFrom(new byte[32]))),
        instr(21, "multiply", s, 2, 20), instr(3, "exponential", s, 21), instr(4, "negate", s, 3)));
    GraphDiff d = GraphDiff.of(write("a", a), write("b", b));
    assertThat(d.verdict()).isEqualTo("2 instructions added: a `constant` and a `multiply` in the entry computation");
    assertThat(d.matching().instructions()).isEqualTo(4);
    assertThat(d.rewired()).isZero();
    GraphDiff back = GraphDiff.of(write("b2", b), write("a2", a));
    assertThat(back.verdict()).isEqualTo("2 instructions removed: a `constant` and a `multiply` in the entry computation");
  }

  @Test
  void removedInstructions_areTheReverse() throws Exception {
    HloModuleProto small = module(computation(100, "main", 3,
        instr(1, "parameter", TestModules.f32(4)).setParameterNumber(0),
        instr(2, "parameter", TestModules.f32(4)).setParameterNumber(1), instr(3, "multiply", TestModules.f32(4), 1, 2)));
    GraphDiff d = GraphDiff.of(write("a", mulAdd(PrimitiveType.F32, null)), write("b", small));
    assertThat(d.verdict()).isEqualTo("1 instruction removed: an `add` in the entry computation");
    assertThat(d.opcodeDeltas()).isEqualTo(Map.of("add", -1));
  }

  @Test
  void dtype_f32ToBf16_isAParameterChange() throws Exception {
    GraphDiff d = GraphDiff.of(write("a", mulAdd(PrimitiveType.F32, null)), write("b", mulAdd(PrimitiveType.BF16, null)));
    assertThat(d.verdict()).isEqualTo("entry parameter 0: f32[4] -> bf16[4], entry parameter 1: f32[4] -> bf16[4], "
        + "and 2 instructions change shape with them");
    assertThat(d.parameters()).allSatisfy(p -> {
      assertThat(p.elementType()).isTrue();
      assertThat(p.dims()).isEmpty();
    });
    assertThat(d.elementTypes()).as("both parameters, the multiply and the add")
        .containsExactly(new GraphDiff.ElementTypeChange("f32", "bf16", 4));
  }

  @Test
  void parameterRows_alignBothSidesByNumber() throws Exception {
    ShapeProto s = TestModules.f32(4);
    HloModuleProto one = module(computation(100, "main", 2, instr(1, "parameter", s).setParameterNumber(0),
        instr(2, "negate", s, 1)));
    GraphDiff d = GraphDiff.of(write("a", one), write("b", mulAdd(PrimitiveType.BF16, null)));
    assertThat(d.parameterRows()).containsExactly(new GraphDiff.ParameterRow(0, "f32[4]{0}", "bf16[4]{0}"),
        new GraphDiff.ParameterRow(1, null, "bf16[4]{0}"));
  }

  @Test
  void elementTypeChange_withoutParameters_isNamedInTheShapeClause() throws Exception {
    // The same f32 inputs, computed in f32 then in bf16 (a convert where the output was f32).
    ShapeProto s = TestModules.f32(4);
    HloModuleProto b = module(computation(100, "main", 4, instr(1, "parameter", s).setParameterNumber(0),
        instr(2, "parameter", s).setParameterNumber(1), instr(3, "multiply", s, 1, 2),
        instr(4, "add", shape(PrimitiveType.BF16, 4), 3, 2)));
    GraphDiff d = GraphDiff.of(write("a", mulAdd(PrimitiveType.F32, null)), write("b", b));
    assertThat(d.verdict()).isEqualTo("1 instruction changes shape (element type f32 -> bf16)");
    assertThat(d.elementTypes()).containsExactly(new GraphDiff.ElementTypeChange("f32", "bf16", 1));
    assertThat(Json.write(d.toJson())).contains("\"element_types\": [\n    {\n      \"from\": \"f32\",\n"
        + "      \"to\": \"bf16\",\n      \"instructions\": 1");
  }

  @Test
  void sharding_isACompileRelevantAttribute() throws Exception {
    OpSharding replicated = OpSharding.newBuilder().setType(OpSharding.Type.REPLICATED).build();
    OpSharding maximal = OpSharding.newBuilder().setType(OpSharding.Type.MAXIMAL).addTileAssignmentDevices(1).build();
    GraphDiff d = GraphDiff.of(write("a", mulAdd(PrimitiveType.F32, replicated)),
        write("b", mulAdd(PrimitiveType.F32, maximal)));
    assertThat(d.same()).isFalse();
    assertThat(d.verdict()).isEqualTo(
        "same structure, shapes and constants; different compile-relevant attribute: sharding of parameter 1");
    assertThat(d.attributes()).containsExactly(new GraphDiff.AttributeChange(null, "parameter 1", "parameter",
        List.of("sharding")));
  }

  @Test
  void json_hasTheDocumentedKeys() throws Exception {
    GraphDiff d = GraphDiff.of(write("a", mulAdd(PrimitiveType.F32, null)), write("b", mulAdd(PrimitiveType.BF16, null)));
    Map<String, Object> j = d.toJson();
    assertThat(j.keySet()).containsExactly("same", "verdict", "kinds", "a", "b", "matching", "parameters",
        "shape_changes", "constants", "attributes", "replaced", "instructions_added", "instructions_removed",
        "computations_added", "computations_removed", "rewired", "opcodes", "module_fields", "element_types");
    @SuppressWarnings("unchecked")
    Map<String, Object> a = (Map<String, Object>) j.get("a");
    assertThat(a.keySet()).containsExactly("source", "module", "fingerprint", "computations", "instructions",
        "parameters", "result");
    assertThat(Json.write(j)).contains("\"kinds\": [\n    \"parameters\"");
  }
}
