package dev.xlac.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProxyEnvironmentTest {
  private static final ProxyEnvironment.Settings SETTINGS = new ProxyEnvironment.Settings(
      Path.of("/c/runtime/abc/libxlac_pjrt.so"), Path.of("/p/plugin.so"), "ff:1:2:3:4", Path.of("/c/runtime/pjrt"),
      Path.of("/tmp/stats"), null);

  @Test
  void jax_getsTheProxyAsPluginXlac_andStableLocations() {
    ProxyEnvironment e = ProxyEnvironment.of(Map.of("PATH", "/bin", "XLAC_PJRT_RECORD", "/stale"), SETTINGS);
    assertThat(e.variables()).containsEntry("PJRT_NAMES_AND_LIBRARY_PATHS", "xlac:/c/runtime/abc/libxlac_pjrt.so")
        .containsEntry("JAX_PLATFORMS", "xlac")
        .containsEntry("JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS", "0")
        .containsEntry("JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX", ".*")
        .containsEntry("JAX_COMPILER_DETAILED_LOGGING_MIN_OPS", "0")
        .containsEntry("XLAC_PJRT_REAL_PLUGIN", "/p/plugin.so")
        .containsEntry("XLAC_PJRT_PLUGIN_SHA256", "ff:1:2:3:4")
        .containsEntry("XLAC_PJRT_LAYOUT", "/c/runtime/pjrt")
        .containsEntry("XLAC_PJRT_STATS", "/tmp/stats")
        .containsEntry("PATH", "/bin")
        .doesNotContainKey("XLAC_PJRT_RECORD"); // not recording: a stale value from the user's shell goes
    assertThat(e.notes()).isEmpty();
  }

  @Test
  void usersOwnPlugins_areKept_andTheirJaxPlatformsWins_withANote() {
    ProxyEnvironment e = ProxyEnvironment.of(Map.of("PJRT_NAMES_AND_LIBRARY_PATHS", "mine:/m.so",
        "JAX_PLATFORMS", "cpu"), SETTINGS);
    assertThat(e.variables()).containsEntry("PJRT_NAMES_AND_LIBRARY_PATHS",
        "mine:/m.so,xlac:/c/runtime/abc/libxlac_pjrt.so").containsEntry("JAX_PLATFORMS", "cpu");
    assertThat(e.notes()).singleElement().asString().contains("JAX_PLATFORMS is cpu");
    assertThat(ProxyEnvironment.of(Map.of("JAX_PLATFORMS", "xlac,cpu"), SETTINGS).notes()).isEmpty();
  }

  @Test
  void aProxyPathJaxCannotParse_isAnEnvironmentError() {
    ProxyEnvironment.Settings s = new ProxyEnvironment.Settings(Path.of("/home/a:b/libxlac_pjrt.so"),
        Path.of("/p.so"), null, null, null, null);
    assertThatThrownBy(() -> ProxyEnvironment.of(Map.of(), s)).isInstanceOfSatisfying(XlacException.class,
        x -> assertThat(x.exitCode()).isEqualTo(ExitCode.ENVIRONMENT));
  }

  @Test
  void torchXla_unsetDevice_becomesLibrary_withTheProxyAsItsPlugin_silently() {
    ProxyEnvironment e = ProxyEnvironment.of(Map.of("PATH", "/bin"), SETTINGS);
    assertThat(e.variables()).containsEntry("PJRT_DEVICE", "LIBRARY")
        .containsEntry("PJRT_LIBRARY_PATH", "/c/runtime/abc/libxlac_pjrt.so")
        .containsEntry("XLAC_TORCH_XLA_DEVICE", "LIBRARY")
        .containsEntry("XLAC_TORCH_XLA_PROXY", "/c/runtime/abc/libxlac_pjrt.so")
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
          .containsEntry("XLAC_TORCH_XLA_PROXY", "/c/runtime/abc/libxlac_pjrt.so");
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
          .containsEntry("XLAC_TORCH_XLA_PROXY", "/c/runtime/abc/libxlac_pjrt.so");
      assertThat(e.notes()).as(device).isEmpty();
    }
  }
}
