package dev.xlac.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.xlac.compiler.pjrt.IsolatedPjrtDriver;
import dev.xlac.compiler.pjrt.PjrtCompileOptions;
import dev.xlac.cache.CacheStore;
import dev.xlac.runtime.PluginIdentityText;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
    // recorded as version 2: version 3 adds this machine's CPU lines after the device kinds
    return recorded.replace("plugin_sha256=" + sha + "\n", "plugin_sha256=" + sha256(plugin.toRealPath()) + "\n")
        .replace("xlac-pjrt-plugin/2\n", "xlac-pjrt-plugin/3\n")
        .replace("\nxla_flags=", "\n" + PluginIdentityText.hostCpuLines("cpu") + "xla_flags=");
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

  private static RecordedRequest recorded(String program, String identity) {
    byte[] format = "mlir".getBytes(StandardCharsets.UTF_8);
    byte[] code = program.getBytes(StandardCharsets.UTF_8);
    byte[] options = {};
    return new RecordedRequest(RequestKey.of(format, code, options, identity.getBytes(StandardCharsets.UTF_8)), format,
        code, options, identity, new byte[] {7}, 1000);
  }

  /**
   * A request recorded on a machine with a CPU feature the build box lacks (or the reverse) gets the box's key, never
   * its recorded one: the entry cannot reach the recording machine, whose proxy keys with its own CPU line; and the
   * run says so in one line.
   */
  @Test
  void recordedOnAnotherCpu_isKeyedForThisMachineOnly_andSaysSo(@TempDir Path dir) throws Exception {
    String here = "xlac-pjrt-plugin/3\nplatform_name=cpu\nhost_cpu=x86 GenuineIntel family 6 model 143\n"
        + "cpu_features=7.ebx:000000ff\nxla_flags=\n";
    String withAvx512 = here.replace("7.ebx:000000ff", "7.ebx:000100ff");
    RecordedRequest elsewhere = recorded("module a", withAvx512);
    RecordedRequest sameCpu = recorded("module b", here);
    List<String> notices = new ArrayList<>();
    List<CompileWork> work;
    try (CacheStore store = CacheStore.open(dir.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO,
        n -> {})) {
      store.putRequests(List.of(elsewhere, sameCpu));
      work = RecordedRequests.plan(store, store.requests(), here, notices::add);
    }
    RequestKey forHere = RequestKey.of(elsewhere.format(), elsewhere.program(), elsewhere.options(),
        here.getBytes(StandardCharsets.UTF_8));
    assertThat(work).map(w -> ((CompileWork.Request) w).key()).contains(forHere).doesNotContain(elsewhere.key())
        .contains(sameCpu.key());
    assertThat(notices).containsExactly("1 of 2 recorded requests were recorded on another CPU (their identity's"
        + " cpu_features line differs from this machine's): their entries are keyed for this machine's CPU and serve"
        + " only machines with the same CPU; compile on a machine like the ones that will run them");
    assertThat(RecordedRequests.otherCpuLine(here.replace("model 143", "model 85"), here)).contains("host_cpu");
    assertThat(RecordedRequests.otherCpuLine("xlac-pjrt-plugin/2\nplatform_name=cpu\n", here))
        .as("a recording without the lines").isEmpty();
  }
}
