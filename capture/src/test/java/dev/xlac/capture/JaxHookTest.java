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
 * The JAX hook {@code run/_xlac_jax.py} in a real interpreter, against stand-ins for the two JAX modules it patches
 * that keep the names and calls it relies on (jaxlib's {@code xla_client.load_pjrt_plugin_dynamically} and
 * {@code pjrt_plugin_loaded}; {@code xla_bridge}'s {@code _backend_factories} of {@code BackendRegistration}s, its
 * own {@code cpu} factory, {@code make_pjrt_c_api_client}, {@code num_cpu_devices}): its fronting, the CPU
 * stand-in, and each failure being one line with JAX left as it is. Real JAX is in {@code RuntimeRunE2ETest}.
 */
class JaxHookTest {
  private static final String PROXY = "/c/runtime/abc/libxlac_pjrt.so";

  @TempDir
  Path tmp;

  private Path fakeJax(boolean withCpu) throws Exception {
    Path site = tmp.resolve("site");
    Files.createDirectories(site.resolve("jaxlib"));
    Files.createDirectories(site.resolve("jax/_src"));
    Files.writeString(site.resolve("jaxlib/__init__.py"), "");
    Files.writeString(site.resolve("jaxlib/xla_client.py"), """
        loaded = {}


        def load_pjrt_plugin_dynamically(plugin_name, library_path):
            import os
            if library_path == os.environ.get("FAKE_UNLOADABLE"):
                raise RuntimeError("cannot dlopen " + library_path)
            loaded[plugin_name] = library_path
            return "c_api of " + plugin_name


        def pjrt_plugin_loaded(plugin_name):
            return plugin_name in loaded
        """);
    Files.writeString(site.resolve("jax/__init__.py"), "");
    Files.writeString(site.resolve("jax/_src/__init__.py"), "");
    Files.writeString(site.resolve("jax/_src/xla_bridge.py"), """
        import dataclasses
        import os
        from jaxlib import xla_client


        @dataclasses.dataclass(frozen=True)
        class BackendRegistration:
            factory: object
            priority: int
            fail_quietly: bool = False
            experimental: bool = False
            c_api: object = None


        class _Flag:
            value = int(os.environ.get("FAKE_NUM_CPU_DEVICES", "-1"))


        num_cpu_devices = _Flag()


        class Client:
            def __init__(self, platform, how):
                self.platform = platform
                self.how = how


        def make_cpu_client(collectives=None):
            return Client("cpu", "JAX's own")


        def make_pjrt_c_api_client(plugin_name, options=None):
            return Client(os.environ.get("FAKE_PLATFORM", "cpu"), "plugin %s from %s with %s"
                          % (plugin_name, xla_client.loaded[plugin_name], options))


        def register_plugin(plugin_name, library_path):
            xla_client.load_pjrt_plugin_dynamically(plugin_name, library_path)
            _backend_factories[plugin_name] = BackendRegistration(
                lambda: make_pjrt_c_api_client(plugin_name), 400, experimental=True)


        _backend_factories = {}
        """ + (withCpu ? "_backend_factories['cpu'] = BackendRegistration(make_cpu_client, 0)\n"
            + "_backend_factories['tpu'] = BackendRegistration(lambda: None, 300, fail_quietly=True)\n" : ""));
    return site;
  }

  private Run python(Path site, Map<String, String> env, String script) throws Exception {
    return HookInterpreter.run(tmp, "_xlac_jax", site, env, List.of("XLA_FLAGS"), script);
  }


  private Map<String, String> served(Path real) {
    return new HashMap<>(Map.of("XLAC_PJRT_PROXY", PROXY, "XLAC_PJRT_REAL_PLUGIN", real.toString()));
  }

  private static final String CPU = """
      from jax._src import xla_bridge as xb
      r = xb._backend_factories["cpu"]
      c = r.factory()
      print("cpu:", c.platform, c.how, "priority", r.priority, "experimental", r.experimental)
      """;

  @Test
  void thePluginLoadedByAnyPath_getsTheProxyUnderItsOwnName_othersAndJaxsCpuUntouched() throws Exception {
    Path real = Files.writeString(tmp.resolve("real.so"), "plugin");
    Path link = Files.createSymbolicLink(tmp.resolve("link.so"), real);
    Path other = Files.writeString(tmp.resolve("other.so"), "another plugin");
    Run r = python(fakeJax(true), served(real), """
        from jax._src import xla_bridge as xb
        xb.register_plugin("mine", "%s")
        xb.register_plugin("other", "%s")
        xb.register_plugin("bare", "libtpu.so")
        from jaxlib import xla_client
        print(sorted(xla_client.loaded.items()))
        """.formatted(link, other) + CPU);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).isEmpty();
    assertThat(r.out()).isEqualTo("""
        [('bare', 'libtpu.so'), ('mine', '%s'), ('other', '%s')]
        cpu: cpu JAX's own priority 0 experimental False
        """.formatted(PROXY, other));
  }

  @Test
  void noPluginOfTheUsers_theProxyStandsInForJaxsCpuClient_asJaxRegisteredIt_withItsDeviceCount() throws Exception {
    Path real = Files.writeString(tmp.resolve("real.so"), "plugin");
    Path site = fakeJax(true);
    Run r = python(site, served(real), CPU);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).isEmpty();
    assertThat(r.out()).isEqualTo("cpu: cpu plugin xlac_cpu from " + PROXY
        + " with {'cpu_device_count': 1} priority 0 experimental False\n");

    Map<String, String> env = served(real);
    env.put("XLA_FLAGS", "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=3");
    assertThat(python(site, env, CPU).out()).contains("{'cpu_device_count': 3}");
    env.put("FAKE_NUM_CPU_DEVICES", "2"); // jax_num_cpu_devices wins, as in JAX's own client
    assertThat(python(site, env, CPU).out()).contains("{'cpu_device_count': 2}");
  }

  @Test
  void aPluginThatIsNotACpuPlugin_isNotJaxsCpu_oneLine() throws Exception {
    Path real = Files.writeString(tmp.resolve("real.so"), "plugin");
    Map<String, String> env = served(real);
    env.put("FAKE_PLATFORM", "cuda");
    Run r = python(fakeJax(true), env, CPU);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).isEqualTo("cpu: cpu JAX's own priority 0 experimental False\n");
    assertThat(r.err().lines().toList()).singleElement().asString()
        .startsWith("xlac: the plugin " + real + " is a cuda plugin, which this command does not load;");
  }

  @Test
  void aJaxThatIsNotAsExpected_isOneLine_andImportsAndRunsAsWithoutXlac() throws Exception {
    Path real = Files.writeString(tmp.resolve("real.so"), "plugin");
    Run r = python(fakeJax(false), served(real), """
        from jax._src import xla_bridge as xb
        xb.register_plugin("mine", "%s")
        from jaxlib import xla_client
        print(xla_client.loaded)
        """.formatted(real));
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).as("the plugin is still fronted").contains("'mine': '" + PROXY + "'");
    assertThat(r.err().lines().toList()).singleElement().asString()
        .startsWith("xlac: cannot put xlac's proxy into JAX (RuntimeError: this JAX registers no 'cpu' backend")
        .endsWith("; JAX's own CPU client runs unserved");
  }

  @Test
  void withoutTheProxysVariables_nothingIsPatched() throws Exception {
    Path real = Files.writeString(tmp.resolve("real.so"), "plugin");
    Run r = python(fakeJax(true), Map.of(), """
        from jax._src import xla_bridge as xb
        xb.register_plugin("mine", "%s")
        from jaxlib import xla_client
        print(xla_client.loaded, xla_client.load_pjrt_plugin_dynamically.__module__)
        """.formatted(real) + CPU);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).isEmpty();
    assertThat(r.out()).isEqualTo("{'mine': '" + real + "'} jaxlib.xla_client\ncpu: cpu JAX's own priority 0"
        + " experimental False\n");
  }

  /** JAX creates its "cpu" backend before "tpu": with libtpu as the plugin, JAX's CPU stays JAX's (review). */
  @Test
  void libtpuAsThePlugin_leavesJaxsCpuClientAlone_unlessJaxPlatformsLeavesTpuOut() throws Exception {
    Path real = Files.writeString(tmp.resolve("libtpu.so"), "plugin");
    Path site = fakeJax(true);
    Map<String, String> env = served(real);
    env.put("TPU_LIBRARY_PATH", real.toString());
    Run r = python(site, env, CPU);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).isEmpty();
    assertThat(r.out()).isEqualTo("cpu: cpu JAX's own priority 0 experimental False\n");
    env.put("JAX_PLATFORMS", "cpu");
    assertThat(python(site, env, CPU).out()).contains("plugin xlac_cpu from " + PROXY);
  }

  @Test
  void aProxyThatCannotBeLoaded_leavesThePluginAsWithoutXlac_oneLine() throws Exception {
    Path real = Files.writeString(tmp.resolve("real.so"), "plugin");
    Map<String, String> env = served(real);
    env.put("FAKE_UNLOADABLE", PROXY);
    Run r = python(fakeJax(true), env, """
        from jax._src import xla_bridge as xb
        xb.register_plugin("mine", "%s")
        from jaxlib import xla_client
        print(xla_client.loaded)
        """.formatted(real));
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).isEqualTo("{'mine': '" + real + "'}\n");
    assertThat(r.err().lines().toList()).singleElement().asString()
        .startsWith("xlac: cannot load xlac's proxy " + PROXY + " as JAX's plugin mine (cannot dlopen");
  }

  /** The hooks were taken when the module was found: a find_spec without an import left the import unhooked. */
  @Test
  void aFindSpecBeforeTheImport_doesNotUseUpTheHook() throws Exception {
    Path real = Files.writeString(tmp.resolve("real.so"), "plugin");
    Run r = python(fakeJax(true), served(real), """
        import importlib.util
        assert importlib.util.find_spec("jaxlib.xla_client") is not None
        from jax._src import xla_bridge as xb
        xb.register_plugin("mine", "%s")
        from jaxlib import xla_client
        print(xla_client.loaded)
        """.formatted(real));
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).isEqualTo("{'mine': '" + PROXY + "'}\n");
  }

  /** The stand-in's own load of the proxy failing made JAX's "cpu" backend fail to initialise. */
  @Test
  void aProxyThatCannotBeLoadedForTheCpuStandIn_leavesJaxsCpuClient_oneLine() throws Exception {
    Path real = Files.writeString(tmp.resolve("real.so"), "plugin");
    Map<String, String> env = served(real);
    env.put("FAKE_UNLOADABLE", PROXY);
    Run r = python(fakeJax(true), env, CPU);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).isEqualTo("cpu: cpu JAX's own priority 0 experimental False\n");
    assertThat(r.err().lines().toList()).singleElement().asString()
        .startsWith("xlac: the plugin " + real + " cannot stand in for JAX's CPU client (cannot dlopen");
  }
}
