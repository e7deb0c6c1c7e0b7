package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.core.ExitCode;
import dev.xlac.core.FailureKind;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The worker-process driver. Misbehaviour comes from the C test plugin (src/test/c), which aborts,
 * segfaults, hangs or rejects depending on the module name; the real CPU plugin proves the worker
 * compiles real graphs with the same identity as the in-process driver.
 */
class IsolatedPjrtDriverTest {
  private static final GraphFingerprint ANY = new GraphFingerprint("hlo1:" + "ab".repeat(32));

  private static CompileRequest named(String moduleName) {
    return new CompileRequest(ANY, moduleName, HloModuleProto.newBuilder().setName(moduleName).build().toByteArray());
  }

  private static IsolatedPjrtDriver testPluginWorker(Duration timeout) {
    return IsolatedPjrtDriver.start(TestPluginBuild.library(), Map.of(), PjrtCompileOptions.DEFAULT, timeout);
  }

  @Test
  void testPlugin_inProcess_compilesAndRoundTrips() {
    try (PjrtDriver driver = PjrtDriver.open(TestPluginBuild.library(), Map.of(), PjrtCompileOptions.DEFAULT)) {
      assertThat(driver.identity().compilerVersion()).isEqualTo("xlac-test 1.0; plugin api 0.94");
      CompileOutcome outcome = driver.compile(named("jit_fine"));
      byte[] artifact = ((CompileOutcome.Success) outcome).artifact();
      assertThat(new String(artifact, StandardCharsets.UTF_8)).isEqualTo("xlac-test-executable:jit_fine");
      try (PjrtLoadedExecutable loaded = driver.client().deserializeAndLoad(artifact)) {
        assertThat(loaded.name()).isEqualTo("jit_fine");
      }
    }
  }

  @Test
  void crashingGraph_isCrashWithSignal_andNextGraphStillCompiles() {
    try (IsolatedPjrtDriver driver = testPluginWorker(Duration.ofMinutes(1))) {
      assertThat(driver.compile(named("jit_before")).succeeded()).isTrue();

      CompileOutcome crashed = driver.compile(named("jit_crash_here"));

      assertThat(crashed).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.CRASH);
        assertThat(f.message()).startsWith("jit_crash_here (abababababab): ").contains("SIGABRT (signal 6)");
      });
      CompileOutcome after = driver.compile(named("jit_after"));
      assertThat(after.succeeded()).isTrue();
      assertThat(new String(((CompileOutcome.Success) after).artifact(), StandardCharsets.UTF_8))
          .isEqualTo("xlac-test-executable:jit_after");
      assertThat(driver.workersStarted()).isEqualTo(2);
    }
  }

  /**
   * CI failed once: an abort was reported as "SIGSEGV in client_compile" because a crash report an
   * earlier worker with the same (reused) pid had left in the temporary directory was read as this
   * worker's.
   */
  @Test
  void staleCrashReportOfAnEarlierProcessWithTheSamePid_isNotTakenForThisWorkers() throws Exception {
    try (IsolatedPjrtDriver driver = testPluginWorker(Duration.ofMinutes(1))) {
      assertThat(driver.compile(named("jit_before")).succeeded()).isTrue();
      Path stale = Path.of(System.getProperty("java.io.tmpdir"),
          "xlac-pjrt-worker-hs_err_" + driver.workerPid() + ".log");
      Files.writeString(stale, """
          # A fatal error has been detected by the Java Runtime Environment:
          #
          #  SIGSEGV (0xb) at pc=0x00007f0000000000, pid=1, tid=1
          # Problematic frame:
          # C  [stale-plugin.so+0x1]  stale_frame+0x1
          """);
      try {
        CompileOutcome crashed = driver.compile(named("jit_crash_here"));

        assertThat(crashed).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
          assertThat(f.kind()).isEqualTo(FailureKind.CRASH);
          assertThat(f.message()).contains("SIGABRT (signal 6)").doesNotContain("SIGSEGV").doesNotContain("stale");
        });
      } finally {
        Files.deleteIfExists(stale);
      }
    }
  }

  @Test
  void segfaultingGraph_isCrashNamingSigsegv() throws Exception {
    try (IsolatedPjrtDriver driver = testPluginWorker(Duration.ofMinutes(1))) {
      CompileOutcome crashed = driver.compile(named("jit_segv"));
      Matcher report = Pattern.compile("\\(report: (.+)\\)$").matcher(((CompileOutcome.Failure) crashed).message());
      if (report.find()) {
        Files.deleteIfExists(Path.of(report.group(1)));
      }

      assertThat(crashed).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.CRASH);
        assertThat(f.message()).contains("SIGSEGV").contains("xlac-test-plugin.so");
        assertThat(f.log()).contains("SIGSEGV");
      });
      assertThat(driver.compile(named("jit_next")).succeeded()).isTrue();
    }
  }

  @Test
  void hangingGraph_isTimeout_andWorkerIsReplaced() {
    try (IsolatedPjrtDriver driver = testPluginWorker(Duration.ofSeconds(2))) {
      CompileOutcome hung = driver.compile(named("jit_hang"));

      assertThat(hung).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.TIMEOUT);
        assertThat(f.message()).contains("no result after 2 s");
        assertThat(f.elapsed()).isGreaterThanOrEqualTo(Duration.ofSeconds(2)).isLessThan(Duration.ofSeconds(30));
      });
      assertThat(driver.compile(named("jit_next")).succeeded()).isTrue();
      assertThat(driver.workersStarted()).isEqualTo(2);
    }
  }

  @Test
  void rejectedGraph_isCompileError_withoutRestart() {
    try (IsolatedPjrtDriver driver = testPluginWorker(Duration.ofMinutes(1))) {
      CompileOutcome rejected = driver.compile(named("jit_reject"));

      assertThat(rejected).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.COMPILE_ERROR);
        assertThat(f.message()).contains("INVALID_ARGUMENT").contains("rejects module jit_reject");
      });
      assertThat(driver.workersStarted()).isEqualTo(1);
    }
  }

  @Test
  void realCpuPlugin_compilesInWorker_withInProcessIdentity() {
    Path plugin = TestPlugins.cpuPlugin();
    var module = GoldenModules.named("jit_matmul");
    try (IsolatedPjrtDriver isolated = IsolatedPjrtDriver.start(plugin, Map.of(), PjrtCompileOptions.DEFAULT,
        Duration.ofMinutes(5));
        PjrtDriver inProcess = PjrtDriver.open(plugin, Map.of(), PjrtCompileOptions.DEFAULT)) {
      assertThat(isolated.identity()).isEqualTo(inProcess.identity());
      CompileOutcome outcome = isolated.compile(CompileRequest.of(module));
      assertThat(outcome.succeeded()).isTrue();
      try (PjrtLoadedExecutable loaded = inProcess.client()
          .deserializeAndLoad(((CompileOutcome.Success) outcome).artifact())) {
        assertThat(loaded.name()).isEqualTo("jit_matmul");
      }
    }
  }

  @Test
  void badPlugin_failsStartWithWorkersOneLineMessage() {
    assertThatThrownBy(() -> IsolatedPjrtDriver.start(Path.of("/lib/x86_64-linux-gnu/libm.so.6"), Map.of(),
        PjrtCompileOptions.DEFAULT, Duration.ofMinutes(1)))
        .isInstanceOfSatisfying(XlacException.class, e -> {
          assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
          assertThat(e.getMessage()).contains("has no GetPjrtApi symbol").doesNotContain("\n");
        });
  }

  @Test
  void closedDriver_refusesWork_andClosesTwice() {
    IsolatedPjrtDriver driver = testPluginWorker(Duration.ofMinutes(1));
    driver.close();
    driver.close();
    assertThatThrownBy(() -> driver.compile(named("jit_x"))).isInstanceOf(IllegalStateException.class);
  }
}
