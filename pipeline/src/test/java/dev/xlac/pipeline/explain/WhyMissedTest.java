package dev.xlac.pipeline.explain;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.CacheStore;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.TestModules;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Why a miss was not served, against real recorded requests: JAX's StableHLO program of samples/jax/mlp.py's
 * {@code jit_stage} as the proxy recorded it on each CPU plugin (with their identity texts), and the
 * {@code jit_train_step} HLO of the golden dumps at batch 32 and 64, sent as a torch_xla-style {@code hlo} request.
 */
class WhyMissedTest {
  /** executable_build_options { num_replicas: N, num_partitions: 1 } */
  private static byte[] options(int replicas) {
    return new byte[] {0x1a, 0x04, 0x20, (byte) replicas, 0x28, 0x01};
  }

  @TempDir
  Path tmp;

  private String identity115;
  private String identity81;
  private byte[] stage115;
  private byte[] stage81;

  @BeforeEach
  void read() throws IOException {
    identity115 = new String(resource("identity-0.115.txt"), StandardCharsets.UTF_8);
    identity81 = new String(resource("identity-0.81.txt"), StandardCharsets.UTF_8);
    stage115 = resource("program-sent-to-0.115.mlirbc");
    stage81 = resource("program-sent-to-0.81.mlirbc");
  }

  private static byte[] resource(String name) throws IOException {
    try (InputStream in = WhyMissedTest.class.getResourceAsStream("/stablehlo/" + name)) {
      return in.readAllBytes();
    }
  }

  private static byte[] trainStep(String run) throws IOException {
    Path dump = TestModules.golden(run).resolve("module_0048.jit_train_step.before_optimizations.hlo.pb");
    return HloProto.parseFrom(Files.readAllBytes(dump)).getHloModule().toByteArray(); // what torch_xla sends
  }

  private static RecordedRequest request(String format, byte[] program, byte[] options, String identity) {
    RequestKey key = RequestKey.of(format.getBytes(StandardCharsets.UTF_8), program, options,
        identity.getBytes(StandardCharsets.UTF_8));
    return new RecordedRequest(key, format.getBytes(StandardCharsets.UTF_8), program, options, identity,
        new byte[] {1, 2, 3}, 1_000_000);
  }

  private CacheStore cache(RecordedRequest... recorded) throws InterruptedException {
    CacheStore store = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
    assertThat(store.putRequests(List.of(recorded)).added()).isEqualTo(recorded.length);
    return store;
  }

  private static WhyMissed.Reason explain(CacheStore store, RecordedRequest miss) {
    return WhyMissed.explain(store, Map.of(miss.key(), 1L), Map.of(miss.key(), miss)).reasons().getFirst();
  }

  @Test
  void moduleName_ofStablehloBytecode_andOfAnHloModule() throws IOException {
    assertThat(MlirStrings.of(stage115)).contains("jit_stage", "main", "jit(stage)");
    assertThat(WhyMissed.moduleName("mlir", stage115)).isEqualTo("jit_stage");
    assertThat(WhyMissed.moduleName("hlo", trainStep("mlp_run1"))).isEqualTo("jit_train_step");
    assertThat(WhyMissed.moduleName("mlir", "module @jit_x {}".getBytes(StandardCharsets.UTF_8))).isEmpty();
    assertThat(WhyMissed.moduleName("hlo", new byte[] {(byte) 0x80})).isEmpty();
  }

  @Test
  void missWithoutReason_notRecorded_whenTheCacheHasNothingOfItsProgramOrModule() throws Exception {
    try (CacheStore store = cache(request("hlo", trainStep("mlp_run1"), options(1), identity115))) {
      WhyMissed.Reason r = explain(store, request("mlir", stage115, options(1), identity115));
      assertThat(r.kind()).isEqualTo(WhyMissed.Kind.NOT_RECORDED);
      assertThat(r.module()).isEqualTo("jit_stage");
      assertThat(r.text()).isEqualTo("not recorded");
      assertThat(r.nearest()).isNull();
    }
  }

  @Test
  void missWithoutReason_otherXlaFlags_namesTheIdentityLineThatDiffers() throws Exception {
    RecordedRequest recorded = request("mlir", stage115, options(1), identity115);
    try (CacheStore store = cache(recorded)) {
      String flagged = identity115.replace("\nxla_flags=\n", "\nxla_flags=--xla_cpu_enable_fast_math=true\n");
      assertThat(flagged).isNotEqualTo(identity115);
      WhyMissed.Reason r = explain(store, request("mlir", stage115, options(1), flagged));
      assertThat(r.kind()).isEqualTo(WhyMissed.Kind.IDENTITY);
      assertThat(r.identityLines()).containsExactly("xla_flags");
      assertThat(r.nearest()).isEqualTo(recorded.key());
      assertThat(r.text()).isEqualTo("recorded for another plugin or machine (line xla_flags differs)");
    }
  }

  @Test
  void missWithoutReason_otherXlaFlags_ofATorchXlaProgramWhoseAttributesCameInAnotherOrder_namesTheFlags()
      throws Exception {
    // the same training step from two torch_xla processes: bytes differ (frontend attribute order), key does not
    Path recordings = Path.of("../runtime/src/test/resources/torch-xla-program");
    byte[] run1 = Files.readAllBytes(recordings.resolve("run1.hlo.pb"));
    byte[] run2 = Files.readAllBytes(recordings.resolve("run2.hlo.pb"));
    assertThat(run1).isNotEqualTo(run2);
    RecordedRequest recorded = request("hlo", run1, options(1), identity81);
    try (CacheStore store = cache(recorded)) {
      String flagged = identity81.replace("\nxla_flags=\n", "\nxla_flags=--xla_cpu_enable_fast_math=true\n");
      assertThat(flagged).isNotEqualTo(identity81);
      WhyMissed.Reason r = explain(store, request("hlo", run2, options(1), flagged));
      assertThat(r.kind()).as(r.text()).isEqualTo(WhyMissed.Kind.IDENTITY);
      assertThat(r.identityLines()).containsExactly("xla_flags");
      assertThat(r.nearest()).isEqualTo(recorded.key());
    }
  }

  @Test
  void missWithoutReason_anotherPlugin_isTheSameProgramAtItsStablehloVersion() throws Exception {
    // Recorded on the 0.115 plugin; the 0.81 plugin gets the same function at StableHLO 1.13.3: other bytes, same
    // program as that plugin gets it.
    try (CacheStore store = cache(request("mlir", stage115, options(1), identity115))) {
      WhyMissed.Reason r = explain(store, request("mlir", stage81, options(1), identity81));
      assertThat(r.kind()).isEqualTo(WhyMissed.Kind.IDENTITY);
      assertThat(r.identityLines()).contains("plugin_sha256", "api_version");
    }
  }

  @Test
  void missWithoutReason_otherOptions_namesTheField() throws Exception {
    try (CacheStore store = cache(request("mlir", stage115, options(1), identity115))) {
      WhyMissed.Reason r = explain(store, request("mlir", stage115, options(2), identity115));
      assertThat(r.kind()).isEqualTo(WhyMissed.Kind.OPTIONS);
      assertThat(r.optionFields()).containsExactly("executable_build_options.num_replicas (field 3.4)");
      assertThat(r.text()).isEqualTo(
          "recorded with other compile options (executable_build_options.num_replicas (field 3.4))");
    }
  }

  @Test
  void missWithoutReason_bothIdentityAndOptions_namesBoth_andPrefersTheNearest() throws Exception {
    String flagged = identity115.replace("\nxla_flags=\n", "\nxla_flags=--xla_a=1\n");
    RecordedRequest near = request("mlir", stage115, options(1), flagged);
    try (CacheStore store = cache(request("mlir", stage115, options(3), identity115), near)) {
      WhyMissed.Reason r = explain(store, request("mlir", stage115, options(2), flagged));
      assertThat(r.kind()).isEqualTo(WhyMissed.Kind.OPTIONS);
      assertThat(r.nearest()).isEqualTo(near.key());
    }
    try (CacheStore store = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_ONLY, null, m -> {})) {
      WhyMissed.Reason r = explain(store, request("mlir", stage115, options(2),
          identity115.replace("\nxla_flags=\n", "\nxla_flags=--xla_b=1\n")));
      assertThat(r.kind()).isEqualTo(WhyMissed.Kind.IDENTITY_AND_OPTIONS);
      assertThat(r.text()).startsWith("recorded for another plugin or machine (line xla_flags differs) and with"
          + " other compile options (executable_build_options.num_replicas");
    }
  }

  @Test
  void missWithoutReason_changedHloProgram_isTheDiffsReason_againstTheNearestOfItsModule() throws Exception {
    RecordedRequest batch32 = request("hlo", trainStep("mlp_run1"), options(1), identity81);
    try (CacheStore store = cache(batch32, request("mlir", stage115, options(1), identity115))) {
      WhyMissed.Reason r = explain(store, request("hlo", trainStep("mlp_batch64"), options(1), identity81));
      assertThat(r.kind()).isEqualTo(WhyMissed.Kind.PROGRAM);
      assertThat(r.module()).isEqualTo("jit_train_step");
      assertThat(r.programChange()).isEqualTo("batch size (32 -> 64)");
      assertThat(r.nearest()).isEqualTo(batch32.key());
      assertThat(r.verdict()).startsWith("entry parameter 19: f32[32,32] -> f32[64,32] (dim 0: 32 -> 64)");
    }
  }

  /** torch_xla names its graphs SyncTensorsGraph.N, N moving with the graph: the same name but for N is its module. */
  @Test
  void missWithoutReason_torchXlaGraphRenumbered_isComparedWithItsFamily() throws Exception {
    byte[] g12 = dev.xlac.hlo.proto.HloProtos.HloModuleProto.parseFrom(trainStep("mlp_run1")).toBuilder()
        .setName("SyncTensorsGraph.12").build().toByteArray();
    byte[] g14 = dev.xlac.hlo.proto.HloProtos.HloModuleProto.parseFrom(trainStep("mlp_batch64")).toBuilder()
        .setName("SyncTensorsGraph.14").build().toByteArray();
    RecordedRequest recorded = request("hlo", g12, options(1), identity81);
    try (CacheStore store = cache(recorded)) {
      WhyMissed.Reason r = explain(store, request("hlo", g14, options(1), identity81));
      assertThat(r.kind()).isEqualTo(WhyMissed.Kind.PROGRAM);
      assertThat(r.module()).isEqualTo("SyncTensorsGraph.14");
      assertThat(r.programChange()).isEqualTo("batch size (32 -> 64)");
      assertThat(r.nearest()).isEqualTo(recorded.key());
    }
  }

  @Test
  void missWithoutReason_changedMlirProgram_isNamedWithItsNearestOfTheModule() throws Exception {
    RecordedRequest recorded = request("mlir", stage115, options(1), identity115);
    byte[] changed = stage115.clone();
    changed[0x1c] ^= 1; // inside the dialect section: the string table (and so the module's name) is as it was
    try (CacheStore store = cache(recorded)) {
      WhyMissed.Reason r = explain(store, request("mlir", changed, options(1), identity115));
      assertThat(r.kind()).isEqualTo(WhyMissed.Kind.PROGRAM);
      assertThat(r.nearest()).isEqualTo(recorded.key());
      assertThat(r.programChange()).isNull();
      assertThat(r.text()).isEqualTo("program changed");
    }
  }

  @Test
  void aMissTheCacheHolds_isNotInTheLayout_andOneWithoutItsRequest_isUnknown() throws Exception {
    RecordedRequest recorded = request("mlir", stage115, options(1), identity115);
    try (CacheStore store = cache(recorded)) {
      RequestKey lost = RequestKey.parse("pjrt1:" + "e".repeat(64));
      Map<RequestKey, Long> misses = new LinkedHashMap<>();
      misses.put(recorded.key(), 2L);
      misses.put(lost, 1L);
      WhyMissed.Summary s = WhyMissed.explain(store, misses, Map.of(recorded.key(), recorded));
      assertThat(s.reasons()).extracting(WhyMissed.Reason::kind)
          .containsExactly(WhyMissed.Kind.NOT_IN_LAYOUT, WhyMissed.Kind.UNKNOWN);
      assertThat(s.lines()).containsExactly(
          "2 not served: recorded, but not in the runtime layout served from: jit_stage x2",
          "1 not served: unknown (the proxy could not keep its request): pjrt1:eeeeeeee");
      assertThat(s.toJson().getFirst()).isInstanceOf(Map.class);
      @SuppressWarnings("unchecked")
      Map<String, Object> j = (Map<String, Object>) s.toJson().getFirst();
      assertThat(j).containsEntry("key", recorded.key().text()).containsEntry("module", "jit_stage")
          .containsEntry("count", 2L).containsEntry("reason", "not_in_layout");
    }
  }

  @Test
  void lines_groupLikeReasons_largestFirst() throws Exception {
    RecordedRequest batch32 = request("hlo", trainStep("mlp_run1"), options(1), identity81);
    try (CacheStore store = cache(batch32)) {
      RecordedRequest step64 = request("hlo", trainStep("mlp_batch64"), options(1), identity81);
      RecordedRequest stage = request("mlir", stage115, options(1), identity115);
      RecordedRequest stage2 = request("mlir", stage115, options(4), identity115);
      Map<RequestKey, Long> misses = new LinkedHashMap<>();
      misses.put(step64.key(), 1L);
      misses.put(stage.key(), 1L);
      misses.put(stage2.key(), 1L);
      WhyMissed.Summary s = WhyMissed.explain(store, misses, Map.of(step64.key(), step64, stage.key(), stage,
          stage2.key(), stage2));
      assertThat(s.lines()).containsExactly("2 not served: not recorded: jit_stage x2",
          "1 not served: program changed (batch size (32 -> 64)): jit_train_step");
    }
  }

  @Test
  void explainOne_aRecordedRequest_againstTheOthers_andAnUnknownKeyIsOneLine() throws Exception {
    RecordedRequest one = request("mlir", stage115, options(1), identity115);
    RecordedRequest two = request("mlir", stage115, options(2), identity115);
    try (CacheStore store = cache(one, two)) {
      WhyMissed.Reason r = WhyMissed.explainOne(store, two.key().text());
      assertThat(r.kind()).isEqualTo(WhyMissed.Kind.OPTIONS);
      assertThat(r.nearest()).isEqualTo(one.key());
      String unknown = "pjrt1:" + "0".repeat(64);
      assertThatThrownBy(() -> WhyMissed.explainOne(store, unknown)).isInstanceOfSatisfying(XlacException.class,
          e -> assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT))
          .hasMessage("no recorded request in cache " + store.directory() + " has key " + unknown);
      assertThatThrownBy(() -> WhyMissed.explainOne(store, "pjrt1:xyz")).isInstanceOf(XlacException.class)
          .hasMessage("'pjrt1:xyz' is not a request key (pjrt1: and 64 hex digits)");
    }
  }
}
