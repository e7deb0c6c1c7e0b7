package dev.xlac.capture;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProxyEnvironmentTest {
  private static final ProxyEnvironment.Settings SETTINGS = new ProxyEnvironment.Settings(
      Path.of("/c/runtime/abc/libxlac_pjrt.so"), Path.of("/p/plugin.so"), "ff:1:2:3:4", Path.of("/c/runtime/pjrt"),
      Path.of("/tmp/stats"), null);

  @TempDir
  static Path userCache;

  /** A user's environment, with its cache directory (where the Python hooks are unpacked) in a temporary one. */
  private static Map<String, String> user(String... pairs) {
    Map<String, String> env = new HashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      env.put(pairs[i], pairs[i + 1]);
    }
    env.put("XDG_CACHE_HOME", userCache.toString());
    return env;
  }

  @Test
  void jax_getsTheProxyAndThePythonHooks_andStableLocations() {
    ProxyEnvironment e = ProxyEnvironment.of(user("PATH", "/bin", "XLAC_PJRT_RECORD", "/stale"), SETTINGS);
    Path hooks = Path.of(e.variables().get("PYTHONPATH"));
    assertThat(hooks).startsWith(userCache.resolve("xlac/python")).isDirectory();
    assertThat(hooks.resolve("sitecustomize.py")).isRegularFile();
    assertThat(hooks.resolve("_xlac_jax.py")).isRegularFile();
    assertThat(e.variables()).containsEntry("XLAC_PJRT_PROXY", "/c/runtime/abc/libxlac_pjrt.so")
        .containsEntry("JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS", "0")
        .containsEntry("JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX", ".*")
        .containsEntry("JAX_COMPILER_DETAILED_LOGGING_MIN_OPS", "0")
        .containsEntry("XLAC_PJRT_REAL_PLUGIN", "/p/plugin.so")
        .containsEntry("XLAC_PJRT_PLUGIN_SHA256", "ff:1:2:3:4")
        .containsEntry("XLAC_PJRT_LAYOUT", "/c/runtime/pjrt")
        .containsEntry("XLAC_PJRT_STATS", "/tmp/stats")
        .containsEntry("PATH", "/bin")
        .doesNotContainKeys("XLAC_PJRT_RECORD", // not recording: a stale value from the user's shell goes
            "PJRT_NAMES_AND_LIBRARY_PATHS", "JAX_PLATFORMS"); // JAX keeps the names it would have used
    assertThat(e.notes()).isEmpty();
    assertThat(ProxyEnvironment.of(user(), SETTINGS).variables().get("PYTHONPATH")).as("the same for every run")
        .isEqualTo(hooks.toString());
  }

  /**
   * The proxy was registered as JAX's plugin "xlac" with JAX_PLATFORMS=xlac: a user's JAX_PLATFORMS=cuda ran
   * unserved (with a note), and without one jax.devices("cpu") failed with "Unknown backend cpu".
   */
  @Test
  void usersJaxPlatformsAndPlugins_areLeftAsSet_silently_andTheirPythonPathFollowsTheHooks() {
    ProxyEnvironment e = ProxyEnvironment.of(user("PJRT_NAMES_AND_LIBRARY_PATHS", "mine:/m.so", "JAX_PLATFORMS",
        "cuda", "PYTHONPATH", "/src:/lib"), SETTINGS);
    assertThat(e.variables()).containsEntry("PJRT_NAMES_AND_LIBRARY_PATHS", "mine:/m.so")
        .containsEntry("JAX_PLATFORMS", "cuda");
    assertThat(e.variables().get("PYTHONPATH")).endsWith(":/src:/lib")
        .startsWith(userCache.resolve("xlac/python").toString());
    assertThat(e.notes()).isEmpty();
  }

  /** JAX read the proxy's path from name:path pairs, so a path with ':' or ',' was refused; it no longer is. */
  @Test
  void aProxyPathWithAColonOrAComma_isFine() {
    ProxyEnvironment.Settings s = new ProxyEnvironment.Settings(Path.of("/home/a:b,c/libxlac_pjrt.so"),
        Path.of("/p.so"), null, null, null, null);
    assertThat(ProxyEnvironment.of(user(), s).variables()).containsEntry("XLAC_PJRT_PROXY",
        "/home/a:b,c/libxlac_pjrt.so");
  }

  @Test
  void torchXla_unsetDevice_becomesLibrary_withTheProxyAsItsPlugin_silently() {
    ProxyEnvironment e = ProxyEnvironment.of(Map.of("PATH", "/bin"), SETTINGS);
    assertThat(e.variables()).containsEntry("PJRT_DEVICE", "LIBRARY")
        .containsEntry("PJRT_LIBRARY_PATH", "/c/runtime/abc/libxlac_pjrt.so")
        .containsEntry("XLAC_TORCH_XLA_DEVICE", "LIBRARY")
        .containsEntry("XLAC_PJRT_PROXY", "/c/runtime/abc/libxlac_pjrt.so")
        .doesNotContainKeys("TPU_LIBRARY_PATH", "NEURON_LIBRARY_PATH", "XPU_LIBRARY_PATH");
    assertThat(e.notes()).isEmpty();
  }

  @Test
  void torchXla_cpuDevice_isBuiltIn_soItBecomesLibrary_withANote() {
    ProxyEnvironment e = ProxyEnvironment.of(Map.of("PJRT_DEVICE", "CPU"), SETTINGS);
    assertThat(e.variables()).containsEntry("PJRT_DEVICE", "LIBRARY")
        .containsEntry("PJRT_LIBRARY_PATH", "/c/runtime/abc/libxlac_pjrt.so")
        .containsEntry("XLAC_TORCH_XLA_DEVICE", "LIBRARY");
    assertThat(e.notes()).singleElement().asString().startsWith("PJRT_DEVICE is CPU, torch_xla's built-in CPU client")
        .contains("/p/plugin.so");
  }

  @Test
  void torchXla_tpuNeuronXpuLibrary_getTheProxyInTheirOwnLibraryVariable() {
    Map<String, String> variables = Map.of("TPU", "TPU_LIBRARY_PATH", "NEURON", "NEURON_LIBRARY_PATH", "XPU",
        "XPU_LIBRARY_PATH", "LIBRARY", "PJRT_LIBRARY_PATH");
    variables.forEach((device, variable) -> {
      ProxyEnvironment e = ProxyEnvironment.of(Map.of("PJRT_DEVICE", device, variable, "/p/plugin.so"), SETTINGS);
      assertThat(e.variables()).as(device).containsEntry("PJRT_DEVICE", device)
          .containsEntry(variable, "/c/runtime/abc/libxlac_pjrt.so").containsEntry("XLAC_TORCH_XLA_DEVICE", device)
          .containsEntry("XLAC_PJRT_PROXY", "/c/runtime/abc/libxlac_pjrt.so");
      variables.values().stream().filter(v -> !v.equals(variable))
          .forEach(other -> assertThat(e.variables()).as(device).doesNotContainKey(other));
      assertThat(e.notes()).as(device).isEmpty();
      assertThat(ProxyEnvironment.torchXlaPluginVariable(Map.of("PJRT_DEVICE", device, variable, "/x/lib.so")))
          .contains(variable);
      assertThat(ProxyEnvironment.torchXlaPluginVariable(Map.of("PJRT_DEVICE", device))).isEmpty();
    });
    assertThat(ProxyEnvironment.torchXlaPluginVariable(Map.of("PJRT_DEVICE", "CPU", "PJRT_LIBRARY_PATH", "/x.so")))
        .isEmpty();
  }

  @Test
  void torchXla_aLibraryVariableNamingAnotherPlugin_isReplaced_withANote() {
    ProxyEnvironment e = ProxyEnvironment.of(Map.of("PJRT_DEVICE", "TPU", "TPU_LIBRARY_PATH", "/opt/libtpu.so"),
        SETTINGS);
    assertThat(e.variables()).containsEntry("TPU_LIBRARY_PATH", "/c/runtime/abc/libxlac_pjrt.so");
    assertThat(e.notes()).singleElement().asString()
        .isEqualTo("TPU_LIBRARY_PATH names /opt/libtpu.so, but xlac serves /p/plugin.so (--plugin or"
            + " $XLAC_PJRT_PLUGIN) in its place");
  }

  /**
   * CUDA (torch_xla 2.9 has no built-in CUDA client) and third-party devices load their plugin only through the
   * DevicePlugin registered for them: the device type is kept, and the hook is told to front that plugin.
   */
  @Test
  void torchXla_aDeviceWithoutPluginVariable_keepsItsDeviceType_andIsFrontedThroughItsRegisteredPlugin() {
    for (String device : new String[] {"CUDA", "MYCHIP"}) {
      ProxyEnvironment e = ProxyEnvironment.of(Map.of("PJRT_DEVICE", device), SETTINGS);
      assertThat(e.variables()).containsEntry("PJRT_DEVICE", device).doesNotContainKey("PJRT_LIBRARY_PATH")
          .containsEntry("XLAC_TORCH_XLA_DEVICE", device)
          .containsEntry("XLAC_PJRT_PROXY", "/c/runtime/abc/libxlac_pjrt.so");
      assertThat(e.notes()).as(device).isEmpty();
    }
  }
}
