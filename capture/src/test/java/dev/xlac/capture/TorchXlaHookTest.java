package dev.xlac.capture;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.capture.HookInterpreter.Run;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The torch_xla hook {@code run/_xlac_torch_xla.py} in a real interpreter, against a stand-in for torch_xla 2.9's
 * registry module that keeps the names and calls the hook relies on ({@code DevicePlugin},
 * {@code _plugin_registry}, {@code register_plugin}, the C++ registration, entry-point plugins registered while
 * torch_xla imports). The real torch_xla is in {@code RuntimeTorchXlaE2ETest}.
 */
class TorchXlaHookTest {
  private static final String PROXY = "/c/runtime/abc/libxlac_pjrt.so";

  @TempDir
  Path tmp;

  private Path fakeTorchXla(boolean withRegistry) throws Exception {
    Path pkg = Files.createDirectories(tmp.resolve("site/torch_xla/experimental"));
    Files.writeString(pkg.getParent().resolve("__init__.py"), """
        class _XLAC:
            registered = {}

            class PjRtPlugin:
                pass

            @staticmethod
            def _register_pjrt_plugin(name, plugin):
                _XLAC.registered[name] = plugin

        from .experimental import plugins  # torch_xla's __init__ registers its entry points here
        plugins.register_plugin("CHIP", plugins.ChipPlugin())
        plugins.register_plugin("OTHER", plugins.ChipPlugin())
        """);
    Files.writeString(pkg.resolve("__init__.py"), "");
    Files.writeString(pkg.resolve("plugins.py"), """
        import torch_xla


        class DevicePlugin(torch_xla._XLAC.PjRtPlugin):
            def library_path(self):
                raise NotImplementedError()

            def configure_single_process(self):
                raise NotImplementedError()

            def physical_chip_count(self):
                return 1

            def client_create_options(self):
                return {}


        class ChipPlugin(DevicePlugin):
            def library_path(self):
                return "/real/libchip.so"

            def physical_chip_count(self):
                return 4

        """ + (withRegistry ? "_plugin_registry = {}\n" : "_other_registry = {}\n") + """

        def register_plugin(name, device_plugin):
            (_plugin_registry if "_plugin_registry" in globals() else _other_registry)[name.upper()] = device_plugin
            torch_xla._XLAC._register_pjrt_plugin(name, device_plugin)
        """);
    return tmp.resolve("site");
  }

  private Run python(Path site, Map<String, String> env, String script) throws Exception {
    return HookInterpreter.run(tmp, "_xlac_torch_xla", site, env, List.of("CPU_NUM_DEVICES"), script);
  }


  private static final String SHOW = """
      import torch_xla
      from torch_xla.experimental import plugins
      for name in ("CHIP", "OTHER", "LIBRARY"):
          p = plugins._plugin_registry.get(name)
          if p is not None:
              c = torch_xla._XLAC.registered[name]
              print(name, type(p).__name__, p.library_path(), c.library_path(), p.physical_chip_count(),
                    p.client_create_options())
      """;

  @Test
  void theDevicesRegisteredPlugin_answersTheProxy_andKeepsItsClassAndAnswers_othersUntouched() throws Exception {
    Run r = python(fakeTorchXla(true), Map.of("XLAC_TORCH_XLA_DEVICE", "CHIP", "XLAC_PJRT_PROXY", PROXY),
        SHOW + "plugins.register_plugin('chip', plugins.ChipPlugin())  # the user's own, later\n"
            + "print('later', plugins._plugin_registry['CHIP'].library_path())\n");
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).isEmpty();
    assertThat(r.out()).isEqualTo("""
        CHIP ChipPlugin %s %s 4 {}
        OTHER ChipPlugin /real/libchip.so /real/libchip.so 4 {}
        later %s
        """.formatted(PROXY, PROXY, PROXY));
  }

  @Test
  void library_getsACpuLikeStandIn_oneProcess_cpuNumDevicesDevices() throws Exception {
    Path site = fakeTorchXla(true);
    Map<String, String> env = new HashMap<>(Map.of("XLAC_TORCH_XLA_DEVICE", "LIBRARY", "XLAC_PJRT_PROXY", PROXY));
    String script = SHOW + "plugins._plugin_registry['LIBRARY'].configure_single_process()\n";
    Run r = python(site, env, script);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).contains("LIBRARY XlacCpuStandIn " + PROXY + " " + PROXY + " 1 {'cpu_device_count': 1}\n")
        .contains("CHIP ChipPlugin /real/libchip.so");
    env.put("CPU_NUM_DEVICES", "2");
    assertThat(python(site, env, script).out()).contains("1 {'cpu_device_count': 2}\n");
  }

  @Test
  void withoutXlacsVariables_nothingChanges() throws Exception {
    Run r = python(fakeTorchXla(true), Map.of(), SHOW);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).isEmpty();
    assertThat(r.out()).startsWith("CHIP ChipPlugin /real/libchip.so /real/libchip.so 4 {}\n");
  }

  /** A torch_xla whose registry is not the one the hook knows: one line, and torch_xla imports as it would. */
  @Test
  void anUnknownRegistry_isOneXlacLine_andTorchXlaIsLeftAsItIs() throws Exception {
    Run r = python(fakeTorchXla(false), Map.of("XLAC_TORCH_XLA_DEVICE", "CHIP", "XLAC_PJRT_PROXY", PROXY), """
        import torch_xla
        from torch_xla.experimental import plugins
        print(plugins._other_registry['CHIP'].library_path())
        """);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).isEqualTo("/real/libchip.so\n");
    assertThat(r.err().lines().toList()).singleElement().asString()
        .startsWith("xlac: torch_xla's device-plugin registry is left as it is (its plugin is not served):"
            + " AttributeError");
  }
}
