package dev.xlac.pipeline.explain;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.xlac.cache.CacheStore;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.TestModules;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.XlaDataProtos.LayoutProto;
import dev.xlac.hlo.proto.XlaDataProtos.LiteralProto;
import dev.xlac.hlo.proto.XlaDataProtos.PrimitiveType;
import dev.xlac.hlo.proto.XlaDataProtos.ProgramShapeProto;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Why a graph is new: the nearest cached graph of the same name, the reason, and the grouped line. */
class WhyNewTest {
  @TempDir
  Path tmp;

  private int files;

  /** A training-step-like graph: {@code add(multiply(p0, broadcast(c)), p1)}, then {@code extra} more adds of p1. */
  private record Spec(String name, long batch, long seq, float constant, int extra, PrimitiveType type, int extraParams,
      boolean tokens) {
    Spec(String name, long batch, long seq, float constant, int extra, PrimitiveType type) {
      this(name, batch, seq, constant, extra, type, 0, false);
    }

    Spec(String name, long batch, long seq, float constant, int extra, PrimitiveType type, int extraParams) {
      this(name, batch, seq, constant, extra, type, extraParams, false);
    }

    /** With a third entry parameter of token ids, s32[batch, seq] (unused, as a step's data input may be). */
    Spec withTokens() {
      return new Spec(name, batch, seq, constant, extra, type, extraParams, true);
    }

    Spec params(int n) {
      return new Spec(name, batch, seq, constant, extra, type, n, tokens);
    }

    Spec batch(long b) {
      return new Spec(name, b, seq, constant, extra, type, extraParams, tokens);
    }

    Spec seq(long s) {
      return new Spec(name, batch, s, constant, extra, type, extraParams, tokens);
    }

    Spec constant(float c) {
      return new Spec(name, batch, seq, c, extra, type, extraParams, tokens);
    }

    Spec extra(int n) {
      return new Spec(name, batch, seq, constant, n, type, extraParams, tokens);
    }

    Spec type(PrimitiveType t) {
      return new Spec(name, batch, seq, constant, extra, t, extraParams, tokens);
    }
  }

  private static Spec step(String name) {
    return new Spec(name, 32, 64, 1.5f, 0, PrimitiveType.F32);
  }

  private static ShapeProto shape(PrimitiveType t, long... dims) {
    ShapeProto.Builder s = ShapeProto.newBuilder().setElementType(t);
    LayoutProto.Builder l = LayoutProto.newBuilder();
    for (long d : dims) {
      s.addDimensions(d).addIsDynamicDimension(false);
    }
    for (int i = dims.length - 1; i >= 0; i--) {
      l.addMinorToMajor(i);
    }
    return s.setLayout(l).build();
  }

  private static HloModuleProto module(Spec g) {
    ShapeProto s = shape(g.type(), g.batch(), g.seq());
    ShapeProto scalar = shape(g.type());
    LiteralProto.Builder lit = LiteralProto.newBuilder().setShape(scalar);
    if (g.type() == PrimitiveType.BF16) {
      int bits = Float.floatToIntBits(g.constant()) >>> 16;
      lit.setBf16S(ByteString.copyFrom(new byte[] {(byte) bits, (byte) (bits >>> 8)}));
    } else {
      lit.setF32S(ByteString.copyFrom(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(g.constant())
          .array()));
    }
    HloComputationProto.Builder c = HloComputationProto.newBuilder().setId(100).setName("main");
    c.addInstructions(HloInstructionProto.newBuilder().setId(1).setName("p0").setOpcode("parameter").setShape(s)
        .setParameterNumber(0));
    c.addInstructions(HloInstructionProto.newBuilder().setId(2).setName("p1").setOpcode("parameter").setShape(s)
        .setParameterNumber(1));
    c.addInstructions(HloInstructionProto.newBuilder().setId(3).setName("c").setOpcode("constant").setShape(scalar)
        .setLiteral(lit));
    c.addInstructions(HloInstructionProto.newBuilder().setId(4).setName("b").setOpcode("broadcast").setShape(s)
        .addOperandIds(3));
    c.addInstructions(HloInstructionProto.newBuilder().setId(5).setName("mul").setOpcode("multiply").setShape(s)
        .addOperandIds(1).addOperandIds(4));
    c.addInstructions(HloInstructionProto.newBuilder().setId(6).setName("add").setOpcode("add").setShape(s)
        .addOperandIds(5).addOperandIds(2));
    long last = 6;
    for (int i = 0; i < g.extra(); i++) {
      c.addInstructions(HloInstructionProto.newBuilder().setId(7 + i).setName("add" + i).setOpcode("add").setShape(s)
          .addOperandIds(last).addOperandIds(2));
      last = 7 + i;
    }
    ProgramShapeProto.Builder psb = ProgramShapeProto.newBuilder().addParameters(s).addParameters(s);
    if (g.tokens()) {
      ShapeProto t = shape(PrimitiveType.S32, g.batch(), g.seq());
      c.addInstructions(HloInstructionProto.newBuilder().setId(40).setName("tokens").setOpcode("parameter").setShape(t)
          .setParameterNumber(2));
      psb.addParameters(t);
    }
    // Extra parameters come first, so the numbers of p0 and p1 shift (as a layer's weights in a pytree do).
    for (int i = 0; i < g.extraParams(); i++) {
      long id = 50 + i;
      c.addInstructions(HloInstructionProto.newBuilder().setId(id).setName("w" + i).setOpcode("parameter")
          .setShape(shape(g.type(), 7)).setParameterNumber(i));
      psb.addParameters(shape(g.type(), 7));
    }
    if (g.extraParams() > 0) {
      for (HloInstructionProto.Builder ib : c.getInstructionsBuilderList()) {
        if (ib.getOpcode().equals("parameter") && ib.getId() < 50) {
          ib.setParameterNumber(ib.getParameterNumber() + g.extraParams());
        }
      }
      long sumId = 80;
      c.addInstructions(HloInstructionProto.newBuilder().setId(sumId).setName("wsum").setOpcode("add")
          .setShape(shape(g.type(), 7)).addOperandIds(50).addOperandIds(50 + g.extraParams() - 1));
    }
    ProgramShapeProto ps = psb.setResult(s).build();
    c.setRootId(last).setProgramShape(ps);
    return HloModuleProto.newBuilder().setName(g.name()).setId(1).setEntryComputationName("main")
        .setEntryComputationId(100).addComputations(c).setHostProgramShape(ps).build();
  }

  private LoadedModule read(Spec g) throws Exception {
    return read(module(g));
  }

  private LoadedModule read(HloModuleProto m) throws Exception {
    Path f = TestModules.writeDump(tmp.resolve("dumps"), "m" + files++ + ".hlo.pb", m);
    return HloModuleReader.forDiff().read(f);
  }

  /**
   * A one-parameter graph unlike {@link #module}: {@code p0: in[dims]}, {@code n} chained
   * {@code negate}s, then a {@code convert} to {@code out} when it differs from {@code in}.
   */
  private static HloModuleProto chain(String name, PrimitiveType in, long[] dims, PrimitiveType out, int n) {
    ShapeProto s = shape(in, dims);
    HloComputationProto.Builder c = HloComputationProto.newBuilder().setId(100).setName("main");
    c.addInstructions(HloInstructionProto.newBuilder().setId(1).setName("p0").setOpcode("parameter").setShape(s)
        .setParameterNumber(0));
    long last = 1;
    for (int i = 0; i < n; i++) {
      c.addInstructions(HloInstructionProto.newBuilder().setId(2 + i).setName("neg" + i).setOpcode("negate")
          .setShape(s).addOperandIds(last));
      last = 2 + i;
    }
    ShapeProto result = s;
    if (out != in) {
      result = shape(out, dims);
      c.addInstructions(HloInstructionProto.newBuilder().setId(90).setName("cvt").setOpcode("convert")
          .setShape(result).addOperandIds(last));
      last = 90;
    }
    ProgramShapeProto ps = ProgramShapeProto.newBuilder().addParameters(s).setResult(result).build();
    c.setRootId(last).setProgramShape(ps);
    return HloModuleProto.newBuilder().setName(name).setId(1).setEntryComputationName("main")
        .setEntryComputationId(100).addComputations(c).setHostProgramShape(ps).build();
  }

  /** Like {@link #run(Spec[], Spec...)}, for modules built by hand. */
  private WhyNew.Summary runModules(List<HloModuleProto> cached, HloModuleProto... fresh) throws Exception {
    try (CacheStore store = open()) {
      for (HloModuleProto g : cached) {
        store.putGraph(read(g));
      }
      SequencedMap<GraphFingerprint, String> added = new LinkedHashMap<>();
      for (HloModuleProto g : fresh) {
        LoadedModule m = read(g);
        store.putGraph(m);
        added.put(m.fingerprint(), m.moduleName());
      }
      return WhyNew.explain(store, added);
    }
  }

  private CacheStore open() throws InterruptedException {
    return CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
  }

  /** Stores {@code cached} as an earlier run's graphs, then {@code fresh} as this run's, and explains the latter. */
  private WhyNew.Summary run(Spec[] cached, Spec... fresh) throws Exception {
    try (CacheStore store = open()) {
      for (Spec g : cached) {
        store.putGraph(read(g));
      }
      SequencedMap<GraphFingerprint, String> added = new LinkedHashMap<>();
      for (Spec g : fresh) {
        LoadedModule m = read(g);
        store.putGraph(m);
        added.put(m.fingerprint(), m.moduleName());
      }
      return WhyNew.explain(store, added);
    }
  }

  private static Spec[] cached(Spec... g) {
    return g;
  }

  @Test
  void batchSize_inEveryGraph_isOneGroup() throws Exception {
    Spec train = step("jit_train_step");
    Spec eval = step("jit_eval_step").extra(1);
    WhyNew.Summary s = run(cached(train, eval), train.batch(48), eval.batch(48));
    assertThat(s.line()).isEqualTo(
        "2 new graphs: 2 differ from cached graphs only in batch size (32 -> 48: jit_train_step, jit_eval_step)");
    assertThat(s.reasons()).allSatisfy(r -> {
      assertThat(r.text()).isEqualTo("batch size (32 -> 48)");
      assertThat(r.verdict()).startsWith("entry parameter 0: f32[32,64] -> f32[48,64] (dim 0: 32 -> 48)");
    });
  }

  @Test
  void sequenceLength_ofTokenIds() throws Exception {
    Spec train = step("jit_train_step").withTokens();
    assertThat(run(cached(train), train.seq(128)).line())
        .isEqualTo("1 new graph: 1 differs from a cached graph only in sequence length (64 -> 128: jit_train_step)");
  }

  @Test
  void dimensionOne_withoutTokenIds_isNotCalledSequenceLength() throws Exception {
    Spec train = step("jit_train_step");
    WhyNew.Summary s = run(cached(train), train.seq(128));
    assertThat(s.reasons().getFirst().text()).isEqualTo("dimension 1 of 2 entry parameters (64 -> 128)");
    assertThat(s.line()).isEqualTo("1 new graph: 1 differs from a cached graph only in dimension 1 of 2 entry"
        + " parameters (64 -> 128: jit_train_step)");
  }

  @Test
  void batchSize_ofTokenIds_andTheirTargets() throws Exception {
    Spec train = step("jit_train_step").withTokens();
    assertThat(run(cached(train), train.batch(8)).reasons().getFirst().text()).isEqualTo("batch size (32 -> 8)");
  }

  @Test
  void dimensionZero_ofALoneParameter_isNotCalledBatchSize() throws Exception {
    // jit_unstack of 2 keys, then of 16: the leading dimension of its only parameter is a count, not a batch.
    HloModuleProto two = chain("jit_unstack", PrimitiveType.U32, new long[] {2, 2}, PrimitiveType.U32, 1);
    HloModuleProto sixteen = chain("jit_unstack", PrimitiveType.U32, new long[] {16, 2}, PrimitiveType.U32, 1);
    WhyNew.Summary s = runModules(List.of(two), sixteen);
    assertThat(s.reasons().getFirst().text()).isEqualTo("dimension 0 of parameter 0 (2 -> 16)");
    assertThat(s.line()).isEqualTo("1 new graph: 1 differs from a cached graph only in dimension 0 of parameter 0"
        + " (2 -> 16: jit_unstack)");
  }

  @Test
  void dimensionZero_ofALoneParameter_isTheBatchSize_whenAStepOfTheSameRunSaysSo() throws Exception {
    // jit_argmax of a batch of logits: alone it is a plain dimension; beside a training step whose
    // inputs changed 32 -> 48 the same way, it is the batch size. A count changing otherwise stays plain.
    Spec train = step("jit_train_step");
    HloModuleProto argmax32 = chain("jit_argmax", PrimitiveType.F32, new long[] {32, 10}, PrimitiveType.F32, 2);
    HloModuleProto argmax48 = chain("jit_argmax", PrimitiveType.F32, new long[] {48, 10}, PrimitiveType.F32, 2);
    HloModuleProto unstack2 = chain("jit_unstack", PrimitiveType.U32, new long[] {2, 2}, PrimitiveType.U32, 1);
    HloModuleProto unstack16 = chain("jit_unstack", PrimitiveType.U32, new long[] {16, 2}, PrimitiveType.U32, 1);
    WhyNew.Summary s = runModules(List.of(module(train), argmax32, unstack2), module(train.batch(48)), argmax48,
        unstack16);
    assertThat(s.reasons()).extracting(WhyNew.Reason::text).containsExactly("batch size (32 -> 48)",
        "batch size (32 -> 48)", "dimension 0 of parameter 0 (2 -> 16)");
    assertThat(s.line()).isEqualTo("3 new graphs: 2 differ from cached graphs only in batch size (32 -> 48:"
        + " jit_train_step, jit_argmax), 1 differs from a cached graph only in dimension 0 of parameter 0 (2 -> 16:"
        + " jit_unstack)");
  }

  @Test
  void dimensionZero_ofOneParameterBesideUnchangedOnes_isTheBatchSize() throws Exception {
    // A step's weights (w0, w1: f32[7]) do not change; its one data input does, in its leading dimension.
    Spec train = step("jit_train_step").params(2);
    HloModuleProto before = module(train);
    HloModuleProto.Builder after = before.toBuilder();
    for (HloInstructionProto.Builder ib : after.getComputationsBuilder(0).getInstructionsBuilderList()) {
      if (ib.getName().equals("p0")) { // p0 alone, f32[32,64] -> f32[48,64] (p1 keeps its shape)
        ib.setShape(shape(PrimitiveType.F32, 48, 64));
      }
    }
    WhyNew.Reason r = runModules(List.of(before), after.build()).reasons().getFirst();
    assertThat(r.verdict()).startsWith("entry parameter 2: f32[32,64] -> f32[48,64] (dim 0: 32 -> 48)");
    assertThat(r.text()).isEqualTo("batch size (32 -> 48)");
  }

  @Test
  void oneConstant() throws Exception {
    Spec train = step("jit_train_step");
    WhyNew.Summary s = run(cached(train), train.constant(2.5f));
    assertThat(s.line())
        .isEqualTo("1 new graph: 1 differs from a cached graph only in a constant (1.5 -> 2.5: jit_train_step)");
    assertThat(s.reasons().getFirst().verdict()).startsWith("1 constant differs: scalar f32 1.5 -> 2.5");
  }

  @Test
  void addedInstructions() throws Exception {
    Spec train = step("jit_train_step");
    assertThat(run(cached(train), train.extra(2)).line())
        .isEqualTo("1 new graph: 1 differs from a cached graph only in 2 added instructions (jit_train_step)");
  }

  @Test
  void addedEntryParameters_withShiftedNumbers_areCounted() throws Exception {
    Spec train = step("jit_train_step");
    WhyNew.Summary s = run(cached(train), train.params(3));
    assertThat(s.reasons().getFirst().text()).isEqualTo("3 added entry parameters and 4 added instructions");
    assertThat(s.line()).isEqualTo("1 new graph: 1 differs from a cached graph in 3 added entry parameters and 4 added"
        + " instructions (jit_train_step)");
  }

  @Test
  void dtype() throws Exception {
    Spec train = step("jit_train_step");
    WhyNew.Summary s = run(cached(train), train.type(PrimitiveType.BF16));
    assertThat(s.reasons().getFirst().text()).isEqualTo("dtype (f32 -> bf16)");
    assertThat(s.line()).startsWith("1 new graph: 1 differs from a cached graph ").contains("in dtype (f32 -> bf16: "
        + "jit_train_step)");
  }

  @Test
  void dtype_ofTheResultAlone_isNamed() throws Exception {
    // jit_convert_element_type: the same f32 input, converted to bf16 where it was kept as f32.
    long[] dims = {64, 64};
    HloModuleProto f32 = chain("jit_convert_element_type", PrimitiveType.F32, dims, PrimitiveType.F16, 1);
    HloModuleProto bf16 = chain("jit_convert_element_type", PrimitiveType.F32, dims, PrimitiveType.BF16, 1);
    WhyNew.Summary s = runModules(List.of(f32), bf16);
    assertThat(s.reasons().getFirst().verdict()).isEqualTo("1 instruction changes shape (element type f16 -> bf16)");
    assertThat(s.line()).isEqualTo("1 new graph: 1 differs from a cached graph only in dtype (f16 -> bf16:"
        + " jit_convert_element_type)");
  }

  @Test
  void dtype_withOtherChanges_isNamedButNotOnly() throws Exception {
    // The bf16 run's casts of each weight shape: the one cached cast has another shape, and kept f32.
    HloModuleProto cached = chain("jit_convert_element_type", PrimitiveType.F32, new long[] {}, PrimitiveType.F32, 1);
    HloModuleProto a = chain("jit_convert_element_type", PrimitiveType.F32, new long[] {256, 64}, PrimitiveType.BF16, 1);
    HloModuleProto b = chain("jit_convert_element_type", PrimitiveType.F32, new long[] {64}, PrimitiveType.BF16, 1);
    WhyNew.Summary s = runModules(List.of(cached), a, b);
    assertThat(s.reasons()).extracting(WhyNew.Reason::text).containsOnly("dtype (f32 -> bf16)");
    assertThat(s.reasons()).noneMatch(WhyNew.Reason::only);
    assertThat(s.line()).isEqualTo("2 new graphs: 2 differ from cached graphs in dtype (f32 -> bf16:"
        + " jit_convert_element_type x2)");
  }

  @Test
  void ofTwoRetypedRelatives_theSameKindOfNumberIsNearer() throws Exception {
    // The bf16 run's broadcasts: a cached f32 one is nearer than a cached s32 one (which is seen later).
    HloModuleProto f32 = chain("jit_broadcast_in_dim", PrimitiveType.F32, new long[] {4}, PrimitiveType.F32, 1);
    HloModuleProto s32 = chain("jit_broadcast_in_dim", PrimitiveType.S32, new long[] {4}, PrimitiveType.S32, 1);
    HloModuleProto bf16 = chain("jit_broadcast_in_dim", PrimitiveType.BF16, new long[] {4}, PrimitiveType.BF16, 1);
    WhyNew.Reason r = runModules(List.of(f32, s32), bf16).reasons().getFirst();
    assertThat(r.text()).isEqualTo("dtype (f32 -> bf16)");
    assertThat(r.only()).isTrue();
  }

  @Test
  void elementTypeChanges_inTwoDirections_areNotOneDtype() throws Exception {
    HloModuleProto x = chain("jit_f", PrimitiveType.F32, new long[] {4}, PrimitiveType.S32, 1);
    HloModuleProto y = chain("jit_f", PrimitiveType.BF16, new long[] {4}, PrimitiveType.F32, 1);
    assertThat(runModules(List.of(x), y).reasons().getFirst().label()).isNotEqualTo("dtype");
  }

  @Test
  void renamedModule_findsItsRelativeByStructure() throws Exception {
    // PyTorch/XLA names a graph after its size (SyncTensorsGraph.N): one more layer renames it.
    Spec old = step("SyncTensorsGraph.116");
    Spec grown = step("SyncTensorsGraph.128").extra(2);
    WhyNew.Summary s = run(cached(old, step("jit_other").batch(4).seq(4).extra(7)), grown);
    WhyNew.Reason r = s.reasons().getFirst();
    assertThat(r.relativeModule()).isEqualTo("SyncTensorsGraph.116");
    assertThat(r.text()).isEqualTo("2 added instructions");
    // A renamed function whose batch size changed.
    s = run(cached(step("jit_train_step").extra(4)), step("jit_train_step_v2").extra(4).batch(48));
    assertThat(s.reasons().getFirst().text()).isEqualTo("batch size (32 -> 48)");
    assertThat(s.reasons().getFirst().relativeModule()).isEqualTo("jit_train_step");
  }

  @Test
  void anotherSmallProgramUnderAnotherName_isNoRelative() throws Exception {
    // p0 -> 3 negates vs p0 -> 3 negates -> convert would be close; p0 -> 3 exps is another program.
    HloModuleProto negates = chain("jit_negate3", PrimitiveType.F32, new long[] {8}, PrimitiveType.F32, 3);
    HloModuleProto.Builder exps = chain("jit_exp3", PrimitiveType.F32, new long[] {8}, PrimitiveType.F32, 3)
        .toBuilder();
    exps.getComputationsBuilder(0).getInstructionsBuilderList().stream()
        .filter(i -> i.getOpcode().equals("negate")).forEach(i -> i.setOpcode("exponential"));
    WhyNew.Summary s = runModules(List.of(negates), exps.build());
    assertThat(s.reasons().getFirst().text()).isEqualTo("no relative");
    assertThat(s.reasons().getFirst().compared()).as("it was tried, and is not close").isEqualTo(1);
  }

  @Test
  void structuralCandidates_preferTheSameNameButForItsNumber_thenTheNearestSize() {
    assertThat(WhyNew.family("SyncTensorsGraph.257")).isEqualTo("SyncTensorsGraph");
    assertThat(WhyNew.family("jit_train_step")).isEqualTo("jit_train_step");
    java.time.Instant t = java.time.Instant.EPOCH;
    java.util.function.BiFunction<String, Long, dev.xlac.cache.GraphInfo> g = (name, bytes) ->
        new dev.xlac.cache.GraphInfo(fp(name.hashCode() & 0xffff), name, "", t, t, 1, bytes, bytes, t, List.of());
    List<dev.xlac.cache.GraphInfo> others = List.of(g.apply("jit_a", 1000L), g.apply("SyncTensorsGraph.9", 1900L),
        g.apply("jit_b", 100_000L), g.apply("SyncTensorsGraph.12", 1000L), g.apply("jit_c", 1100L));
    assertThat(WhyNew.structuralCandidates("SyncTensorsGraph.12", 1000, others))
        .extracting(dev.xlac.cache.GraphInfo::moduleName)
        .as("not itself by name, not 100x the size").containsExactly("SyncTensorsGraph.9", "jit_a", "jit_c");
  }

  @Test
  void noRelative_andGrouping_inOneLine() throws Exception {
    Spec train = step("jit_train_step");
    Spec eval = step("jit_eval_step").extra(1);
    WhyNew.Summary s = runModules(List.of(module(train), module(eval)), module(train.batch(48)),
        chain("jit_new_metric", PrimitiveType.F32, new long[] {5}, PrimitiveType.F32, 6), module(eval.batch(48)));
    assertThat(s.line()).isEqualTo("3 new graphs: 2 differ from cached graphs only in batch size (32 -> 48:"
        + " jit_train_step, jit_eval_step), 1 has no relative (jit_new_metric)");
    WhyNew.Reason none = s.reasons().get(1);
    assertThat(none.text()).isEqualTo("no relative");
    assertThat(none.relative()).isNull();
  }

  @Test
  void differentReasons_areSeparateGroups_largestFirst() throws Exception {
    Spec train = step("jit_train_step");
    Spec eval = step("jit_eval_step").extra(1);
    Spec init = step("jit_init").extra(2);
    WhyNew.Summary s = run(cached(train, eval, init), init.constant(0.5f), train.batch(16), eval.batch(16));
    assertThat(s.line()).isEqualTo("3 new graphs: 2 differ from cached graphs only in batch size (32 -> 16:"
        + " jit_train_step, jit_eval_step), 1 differs from a cached graph only in a constant (1.5 -> 0.5: jit_init)");
  }

  @Test
  void theNearestRelative_isTheOneWithFewestChanges() throws Exception {
    Spec train = step("jit_train_step");
    WhyNew.Summary s = run(cached(train.constant(2.5f), train.batch(48).constant(2.5f).extra(1)),
        train.batch(48).constant(2.5f));
    assertThat(s.reasons().getFirst().text()).isEqualTo("1 removed instruction");
    s = run(cached(), train.batch(48).constant(1.5f));
    assertThat(s.reasons().getFirst().text()).as("b48/c2.5 is one constant away, b32/c1.5 a batch size")
        .isEqualTo("a constant (2.5 -> 1.5)");
  }

  private static GraphFingerprint fp(int n) {
    return new GraphFingerprint(String.format("hlo1:%064x", n));
  }

  private static WhyNew.Reason verdictOnly(int n, String module, String verdict) {
    return new WhyNew.Reason(fp(n), module, fp(100 + n), module, verdict, verdict.split("; ", 2)[0], null, false, 1);
  }

  @Test
  void theDiffsOwnWords_areOneGroup_andRepeatedNamesAreCounted() {
    WhyNew.Summary one = new WhyNew.Summary(List.of(verdictOnly(1, "jit_f", "2 instructions changed opcode; 1 more")),
        5);
    assertThat(one.line()).isEqualTo("1 new graph: 1 differs from a cached graph (2 instructions changed opcode: jit_f)");
    WhyNew.Summary several = new WhyNew.Summary(List.of(verdictOnly(1, "jit_f", "2 instructions changed opcode"),
        verdictOnly(2, "jit_f", "module-level setting differs: input_output_alias"),
        verdictOnly(3, "jit_g", "3 instructions take other operands")), 5);
    assertThat(several.line()).isEqualTo("3 new graphs: 3 differ from cached graphs in other ways (jit_f x2, jit_g;"
        + " see xlac cache why)");
    List<WhyNew.Reason> many = new java.util.ArrayList<>();
    for (int i = 0; i < 8; i++) {
      many.add(new WhyNew.Reason(fp(i), "jit_" + i, null, null, null, "no relative", null, false, 0));
    }
    assertThat(new WhyNew.Summary(many, 5).line()).isEqualTo("8 new graphs: 8 have no relative (jit_0, jit_1, jit_2,"
        + " jit_3, jit_4, jit_5 and 2 more)");
  }

  @Test
  void aFirstRun_printsNoLine_butKeepsTheReasons() throws Exception {
    WhyNew.Summary s = run(cached(), step("jit_train_step"), step("jit_eval_step").extra(1));
    assertThat(s.line()).isNull();
    assertThat(s.reasons()).extracting(WhyNew.Reason::text).containsExactly("no relative", "no relative");
    assertThat(WhyNew.Summary.NONE.line()).isNull();
  }

  @Test
  void explainOne_findsTheRelativeOtherThanItself() throws Exception {
    Spec train = step("jit_train_step");
    GraphFingerprint fp;
    try (CacheStore store = open()) {
      store.putGraph(read(train));
      LoadedModule m = read(train.batch(48));
      store.putGraph(m);
      fp = m.fingerprint();
      WhyNew.Reason r = WhyNew.explainOne(store, fp);
      assertThat(r.text()).isEqualTo("batch size (32 -> 48)");
      assertThat(r.relative()).isNotNull().isNotEqualTo(fp);
      LoadedModule alone = read(chain("jit_alone", PrimitiveType.F32, new long[] {3}, PrimitiveType.F32, 5));
      store.putGraph(alone);
      assertThat(WhyNew.explainOne(store, alone.fingerprint()).text()).isEqualTo("no relative");
    }
  }
}
