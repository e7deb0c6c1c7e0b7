package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.core.FailureKind;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Compiling a recorded request (its own format, program and options) in a worker, and what the worker reports
 * for the plugin identity text, against the real CPU plugin. The resources are what xlac's C proxy recorded for
 * one jitted function of samples/jax/mlp.py (JAX 0.10.2) on the 0.115 plugin. That the text made of these facts
 * is the proxy's is pipeline's {@code RecordedRequestsTest}.
 */
class RecordedRequestCompileTest {
  private static final dev.xlac.core.ProgramKey KEY = dev.xlac.compiler.ProgramKeys.parse("pjrt1:" + "ab".repeat(32));

  private static byte[] resource(String name) throws IOException {
    try (InputStream in = RecordedRequestCompileTest.class.getResourceAsStream("/recorded/" + name)) {
      return in.readAllBytes();
    }
  }

  private static String sha256(Path file) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
  }

  private static IsolatedPjrtDriver start(Path plugin) {
    return IsolatedPjrtDriver.start(plugin, Map.of(), PjrtCompileOptions.DEFAULT, Duration.ofMinutes(2));
  }

  @Test
  void theWorkerReportsThePluginsFacts() throws Exception {
    try (IsolatedPjrtDriver d = start(TestPlugins.cpuPlugin())) {
      PjrtPluginFacts f = d.pluginFacts().orElseThrow();
      assertThat(f.platformName()).isEqualTo("cpu");
      assertThat(f.apiMajor()).isZero();
      assertThat(f.fileSha256()).isEqualTo(sha256(TestPlugins.cpuPlugin().toRealPath()));
      assertThat(f.deviceKinds()).isNotEmpty().containsOnly("cpu");
      assertThat(f.attributes()).anySatisfy(a -> {
        assertThat(a.name()).isEqualTo("stablehlo_current_version");
        assertThat(a.value()).isInstanceOf(long[].class);
      });
    }
  }

  @Test
  void recordedRequest_compilesWithItsOwnFormatAndOptions() throws Exception {
    try (IsolatedPjrtDriver d = start(TestPlugins.cpuPlugin())) {
      CompileOutcome out = d.compile(CompileRequest.recorded(KEY, "mlir request", "mlir",
          resource("jax-program-stablehlo-1.17.0.mlirbc"), resource("jax-options.pb")));
      assertThat(out).isInstanceOf(CompileOutcome.Success.class);
      assertThat(((CompileOutcome.Success) out).artifact()).isNotEmpty();
    }
  }

  @Test
  void aProgramThePluginRejects_isACompileError_withThePluginsLog() throws Exception {
    try (IsolatedPjrtDriver d = start(TestPlugins.cpuPlugin())) {
      CompileOutcome out = d.compile(CompileRequest.recorded(KEY, "mlir request", "mlir",
          "not a module".getBytes(StandardCharsets.UTF_8), resource("jax-options.pb")));
      assertThat(out).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.COMPILE_ERROR);
        assertThat(f.message()).startsWith("mlir request (abababababab): PJRT_Client_Compile").doesNotContain("\n");
        assertThat(f.log()).isNotBlank();
      });
    }
  }
}
