package dev.xlac.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.xlac.compiler.pjrt.IsolatedPjrtDriver;
import dev.xlac.compiler.pjrt.PjrtCompileOptions;
import dev.xlac.runtime.PluginIdentityText;
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
 * The plugin identity text made of what a worker reports is the C proxy's, line for line, on both real CPU
 * plugins; else pre-compiled requests would never match a training run's keys. The resources are the texts the
 * proxy wrote into its records of samples/jax/mlp.py on each plugin.
 */
class RecordedRequestsTest {
  private static String env(String name) {
    String p = System.getenv(name);
    assumeTrue(p != null && !p.isBlank(), name + " is not set; scripts/test sets it");
    return p;
  }

  private static String sha256(Path file) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
  }

  /** The proxy's text with the plugin file's SHA-256 on this machine (every other line as recorded). */
  private static String proxyText(String resource, Path plugin) throws Exception {
    String recorded;
    try (InputStream in = RecordedRequestsTest.class.getResourceAsStream("/stablehlo/" + resource)) {
      recorded = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    String sha = PluginIdentityText.field(recorded, "plugin_sha256").orElseThrow();
    return recorded.replace("plugin_sha256=" + sha + "\n", "plugin_sha256=" + sha256(plugin.toRealPath()) + "\n");
  }

  @Test
  void identityText_isTheProxysText_onBothPlugins() throws Exception {
    for (var p : List.of(Map.entry(env("XLAC_PJRT_PLUGIN"), "identity-0.115.txt"),
        Map.entry(env("XLAC_PJRT_PLUGIN_2"), "identity-0.81.txt"))) {
      Path plugin = Path.of(p.getKey());
      try (IsolatedPjrtDriver d = IsolatedPjrtDriver.start(plugin, Map.of(), PjrtCompileOptions.DEFAULT,
          Duration.ofMinutes(2))) {
        String text = RecordedRequests.identityText(d.pluginFacts().orElseThrow(), Map.of());
        assertThat(text).as(p.getValue()).isEqualTo(proxyText(p.getValue(), plugin));
      }
    }
  }

  @Test
  void identityText_namesTheEnvironmentsFlags_asTheProxyKeysThem() throws Exception {
    var facts = FakeCompiler.FACTS;
    String text = RecordedRequests.identityText(facts, Map.of("XLA_FLAGS", "  --xla_dump_to=/tmp/d  --xla_cpu_foo=1\n",
        "LIBTPU_INIT_ARGS", "--a=b"));
    assertThat(text).contains("\nxla_flags=--xla_cpu_foo=1\n", "\nlibtpu_init_args=--a=b\n",
        "\ndevice_kind=fake device\n", "\nattribute=fake_version=i:3\n");
  }
}
