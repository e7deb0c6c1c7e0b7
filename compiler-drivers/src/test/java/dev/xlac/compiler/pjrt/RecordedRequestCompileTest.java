package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.core.FailureKind;
import dev.xlac.runtime.PluginIdentityText;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Compiling a recorded request (its own format, program and options) in a worker, and the plugin identity text
 * the worker reports, against the real CPU plugins. The resources are what xlac's C proxy recorded for one
 * jitted function of samples/jax/mlp.py (JAX 0.10.2) on the 0.115 plugin, and the identity texts the proxy wrote
 * on each plugin: the worker's text must be the proxy's, line for line, or the keys of pre-compiled requests would
 * never match a training run's.
 */
class RecordedRequestCompileTest {
  private static final RequestKey KEY = RequestKey.parse("pjrt1:" + "ab".repeat(32));

  private static byte[] resource(String name) throws IOException {
    try (InputStream in = RecordedRequestCompileTest.class.getResourceAsStream("/recorded/" + name)) {
      return in.readAllBytes();
    }
  }

  private static Path secondPlugin() {
    String p = System.getenv("XLAC_PJRT_PLUGIN_2");
    assumeTrue(p != null && !p.isBlank(), "XLAC_PJRT_PLUGIN_2 (the xla-cpu-pjrt 0.81 plugin) is not set; scripts/test sets it");
    return Path.of(p);
  }

  private static String sha256(Path file) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
  }

  /** The proxy's text with the plugin file's SHA-256 of this machine (the rest must be equal as recorded). */
  private static String proxyText(String resource, Path plugin) throws Exception {
    String recorded = new String(resource(resource), StandardCharsets.UTF_8);
    String sha = PluginIdentityText.field(recorded, "plugin_sha256").orElseThrow();
    return recorded.replace("plugin_sha256=" + sha + "\n", "plugin_sha256=" + sha256(plugin.toRealPath()) + "\n");
  }

  private static IsolatedPjrtDriver start(Path plugin) {
    return IsolatedPjrtDriver.start(plugin, Map.of(), PjrtCompileOptions.DEFAULT, Duration.ofMinutes(2));
  }

  @Test
  void identityText_isTheProxysText_onBothPlugins() throws Exception {
    assumeTrue(System.getenv("XLA_FLAGS") == null && System.getenv("LIBTPU_INIT_ARGS") == null,
        "the recorded texts were taken without XLA_FLAGS and LIBTPU_INIT_ARGS");
    for (var p : List.of(Map.entry(TestPlugins.cpuPlugin(), "identity-0.115.txt"),
        Map.entry(secondPlugin(), "identity-0.81.txt"))) {
      try (IsolatedPjrtDriver d = start(p.getKey())) {
        assertThat(d.pluginIdentityText()).as(p.getValue()).contains(proxyText(p.getValue(), p.getKey()));
      }
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
