package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.core.ExitCode;
import dev.xlac.core.FailureKind;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The PJRT driver against XLA's real CPU plugin (XLAC_PJRT_PLUGIN). */
class PjrtDriverTest {
  private static PjrtDriver driver;

  @BeforeAll
  static void open() {
    driver = PjrtDriver.open(TestPlugins.cpuPlugin(), Map.of("cpu_device_count", "1"), PjrtCompileOptions.DEFAULT);
  }

  @AfterAll
  static void close() {
    if (driver != null) {
      driver.close();
    }
  }

  static List<LoadedModule> goldenModules() {
    return GoldenModules.all();
  }

  @Test
  void client_reportsCpuPlatformAndIdentity() {
    assertThat(driver.client().platformName()).isEqualTo("cpu");
    assertThat(driver.plugin().apiMajor()).isZero();
    assertThat(driver.plugin().apiMinor()).isGreaterThanOrEqualTo(PjrtApi.MIN_MINOR);

    var identity = driver.identity();
    assertThat(identity.driver()).isEqualTo("pjrt");
    assertThat(identity.target()).isEqualTo("cpu");
    assertThat(identity.compilerVersion())
        .startsWith("cpu " + driver.client().platformVersion())
        .endsWith("; plugin api " + driver.plugin().apiVersion());
    assertThat(identity.options()).containsEntry("client.cpu_device_count", "1")
        .containsEntry("compile.device_ordinal", "-1")
        .containsEntry("compile.num_replicas", "1")
        .containsEntry("compile.num_partitions", "1")
        .containsEntry("plugin.sha256", driver.plugin().fileSha256());
    assertThat(driver.plugin().fileSha256()).matches("[0-9a-f]{64}");
  }

  @Test
  void goldenModules_areThere() {
    assertThat(goldenModules()).hasSizeGreaterThanOrEqualTo(5);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("goldenModules")
  void compile_goldenModule_producesSerializedExecutable(LoadedModule module) {
    CompileOutcome outcome = driver.compile(CompileRequest.of(module));

    assertThat(outcome).isInstanceOf(CompileOutcome.Success.class);
    CompileOutcome.Success success = (CompileOutcome.Success) outcome;
    assertThat(success.artifact()).hasSizeGreaterThan(100);
    assertThat(success.phases()).containsOnlyKeys("compile", "serialize");
    assertThat(success.elapsed()).isPositive();
  }

  @Test
  void serializedExecutable_loadsBackWithSameShape() {
    LoadedModule module = GoldenModules.named("jit_train_step");
    byte[] artifact;
    long outputs;
    try (PjrtLoadedExecutable compiled = driver.client().compile(module.module().toByteArray(),
        PjrtCompileOptions.DEFAULT)) {
      artifact = compiled.serialize();
      outputs = compiled.numOutputs();
    }

    try (PjrtLoadedExecutable loaded = driver.client().deserializeAndLoad(artifact)) {
      assertThat(loaded.name()).isEqualTo("jit_train_step");
      assertThat(loaded.numOutputs()).isEqualTo(outputs).isEqualTo(expectedOutputs(module.module()));
    }
  }

  /** A tuple-shaped entry result is returned as one buffer per element. */
  private static long expectedOutputs(HloModuleProto module) {
    var result = module.getHostProgramShape().getResult();
    return result.getTupleShapesCount() > 0 ? result.getTupleShapesCount() : 1;
  }

  @Test
  void compile_invalidOpcode_isPjrtExceptionWithCode_andClientStaysUsable() {
    byte[] broken = withOpcode(GoldenModules.named("jit_matmul").module(), "frobnicate").toByteArray();

    assertThatThrownBy(() -> driver.client().compile(broken, PjrtCompileOptions.DEFAULT))
        .isInstanceOfSatisfying(PjrtException.class, e -> {
          assertThat(e.code()).isEqualTo(PjrtErrorCode.INVALID_ARGUMENT);
          assertThat(e.function()).isEqualTo("PJRT_Client_Compile");
          assertThat(e.exitCode()).isEqualTo(ExitCode.WORK_FAILED);
          assertThat(e.getMessage()).doesNotContain("\n")
              .startsWith("PJRT_Client_Compile failed: INVALID_ARGUMENT: ")
              .contains("frobnicate");
        });

    CompileOutcome next = driver.compile(CompileRequest.of(GoldenModules.named("jit_matmul")));
    assertThat(next.succeeded()).isTrue();
  }

  @Test
  void driver_invalidModule_isCompileErrorOutcome() {
    LoadedModule matmul = GoldenModules.named("jit_matmul");
    CompileRequest request = new CompileRequest(matmul.fingerprint(), "jit_matmul",
        withOpcode(matmul.module(), "frobnicate").toByteArray());

    CompileOutcome outcome = driver.compile(request);

    assertThat(outcome).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
      assertThat(f.kind()).isEqualTo(FailureKind.COMPILE_ERROR);
      assertThat(f.message()).startsWith("jit_matmul (" + matmul.fingerprint().shortForm() + "): ")
          .contains("INVALID_ARGUMENT");
      assertThat(f.log()).contains("frobnicate");
    });
  }

  @Test
  void compile_garbageBytes_isPjrtException() {
    assertThatThrownBy(() -> driver.client().compile(new byte[] {1, 2, 3, 4}, PjrtCompileOptions.DEFAULT))
        .isInstanceOf(PjrtException.class)
        .hasMessageStartingWith("PJRT_Client_Compile failed: ");
  }

  @Test
  void deserialize_garbage_isPjrtException() {
    assertThatThrownBy(() -> driver.client().deserializeAndLoad(new byte[] {9, 9, 9}))
        .isInstanceOf(PjrtException.class)
        .hasMessageStartingWith("PJRT_Executable_DeserializeAndLoad failed: ");
  }

  static HloModuleProto withOpcode(HloModuleProto module, String opcode) {
    HloModuleProto.Builder b = module.toBuilder();
    HloComputationProto.Builder entry = b.getComputationsBuilderList().stream()
        .filter(c -> c.getId() == module.getEntryComputationId()).findFirst().orElseThrow();
    var root = entry.getInstructionsBuilderList().stream()
        .filter(i -> i.getId() == entry.getRootId()).findFirst().orElseThrow();
    root.setOpcode(opcode);
    return b.build();
  }
}
