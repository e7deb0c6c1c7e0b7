package dev.xlac.capture;

import dev.xlac.core.XlacException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The environment that puts xlac's runtime proxy ({@code libxlac_pjrt.so}) in front of a
 * framework's PJRT plugin, for {@code xlac run} and for recording during {@code xlac dump} and the
 * one-shot {@code parallel-compile}: the proxy's own variables ({@code runtime/README.md},
 * "Environment") and the framework's way of loading a plugin by path.
 *
 * <ul>
 *   <li>JAX: xlac's Python hooks ({@link PythonHooks}) first on {@code PYTHONPATH}, and {@code XLAC_PJRT_PROXY}
 *       naming the proxy: {@code run/_xlac_jax.py} loads the proxy wherever JAX loads the real plugin (a
 *       {@code jax_plugins} package or entry point, {@code PJRT_NAMES_AND_LIBRARY_PATHS}, {@code TPU_LIBRARY_PATH}),
 *       under the plugin's own name, and stands in for JAX's own CPU client when the command loads the plugin
 *       under no name of its own. {@code JAX_PLATFORMS} and the user's plugin registrations are left as set.
 *       Also {@code JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS=0} and
 *       {@code JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX=.*}, so that the script's path is not in
 *       the program bytes, and hence not in the request key; {@code JAX_COMPILER_DETAILED_LOGGING_MIN_OPS=0}
 *       as {@code xlac dump} sets it, because JAX writes the resulting {@code xla_detailed_logging} into
 *       the compile options.</li>
 *   <li>PyTorch/XLA 2.9: through its device-plugin registry ({@link #torchXla}): {@code XLAC_TORCH_XLA_DEVICE}
 *       tells the hook {@code run/_xlac_torch_xla.py} which DevicePlugin's library is the proxy, so {@code PJRT_DEVICE} (TPU, NEURON, CUDA, ...) is kept and torch_xla's launchers
 *       work. The library-path variable of TPU, NEURON and XPU ({@code TPU_LIBRARY_PATH}, ...) names the proxy
 *       too, for torch_xla's path without the registry. Unset or {@code CPU} (torch_xla's built-in CPU client,
 *       which loads no plugin) becomes {@code PJRT_DEVICE=LIBRARY} with {@code PJRT_LIBRARY_PATH}, with a note
 *       for {@code CPU}; the hook registers a CPU-like DevicePlugin for {@code LIBRARY}.</li>
 * </ul>
 *
 * Both frameworks get their variables at once: the command may be either (or both).
 *
 * @param variables the complete environment for the command
 * @param notes one line each, for the user
 */
public record ProxyEnvironment(Map<String, String> variables, List<String> notes) {
  public static final String REAL_PLUGIN = "XLAC_PJRT_REAL_PLUGIN";
  public static final String PLUGIN_SHA256 = "XLAC_PJRT_PLUGIN_SHA256";
  public static final String LAYOUT = "XLAC_PJRT_LAYOUT";
  public static final String RECORD = "XLAC_PJRT_RECORD";
  public static final String STATS = "XLAC_PJRT_STATS";

  /** The proxy library, for the Python hooks, which load it in the real plugin's place. */
  public static final String PROXY = "XLAC_PJRT_PROXY";
  static final String JAX_FULL_TRACEBACKS = "JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS";
  static final String JAX_FILE_REGEX = "JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX";

  /**
   * What the proxy is told.
   *
   * @param proxy the proxy library
   * @param realPlugin the real PJRT plugin
   * @param pluginSha256 {@code HEX:SIZE:MTIME_NS:DEV:INO}, or null (the proxy hashes the plugin itself)
   * @param layout the runtime layout to serve from, or null (serve nothing)
   * @param stats where the proxy writes its statistics, or null
   * @param record the record spool, or null (no recording)
   */
  public record Settings(Path proxy, Path realPlugin, String pluginSha256, Path layout, Path stats, Path record) {}

  /** {@code user} (the user's environment, or a traced run's) with the proxy in front of the plugin. */
  public static ProxyEnvironment of(Map<String, String> user, Settings s) {
    Map<String, String> env = new HashMap<>(user);
    List<String> notes = new ArrayList<>();
    env.put(REAL_PLUGIN, s.realPlugin().toAbsolutePath().toString());
    putOrRemove(env, PLUGIN_SHA256, s.pluginSha256());
    putOrRemove(env, LAYOUT, absolute(s.layout()));
    putOrRemove(env, STATS, absolute(s.stats()));
    putOrRemove(env, RECORD, absolute(s.record()));
    frameworks(env, user, s.proxy().toAbsolutePath(), notes);
    return new ProxyEnvironment(Map.copyOf(env), List.copyOf(notes));
  }

  private static void frameworks(Map<String, String> env, Map<String, String> user, Path proxy, List<String> notes) {
    // JAX (and the Python hooks of any framework).
    env.put(PROXY, proxy.toString());
    env.put("PYTHONPATH", PythonHooks.firstOn(user.get("PYTHONPATH"), user));
    env.put(JAX_FULL_TRACEBACKS, "0");
    env.put(JAX_FILE_REGEX, ".*");
    // JAX writes xla_detailed_logging (true for modules of at least this many ops) into the compile
    // options, so into the request key; xlac dump sets 0 to dump every module, and a recording made
    // while dumping must give the keys that xlac run asks for.
    env.put(TraceEnvironment.JAX_MIN_OPS, "0");
    torchXla(env, user, proxy, notes);
  }

  /** torch_xla's device plugins by {@code PJRT_DEVICE}, and the variable each reads its library path from. */
  static final Map<String, String> TORCH_XLA_LIBRARY_VARIABLES = Map.of("TPU", "TPU_LIBRARY_PATH", "NEURON",
      "NEURON_LIBRARY_PATH", "XPU", "XPU_LIBRARY_PATH", "LIBRARY", "PJRT_LIBRARY_PATH");
  static final String TORCH_XLA_DEVICE = "PJRT_DEVICE";
  /**
   * The device type whose registered DevicePlugin the hook {@code run/_xlac_torch_xla.py} fronts: its
   * {@code library_path()} answers {@link #PROXY}.
   */
  static final String TORCH_XLA_HOOK_DEVICE = "XLAC_TORCH_XLA_DEVICE";

  /**
   * The plugin variable of the torch_xla device in {@code user}'s {@code PJRT_DEVICE} (e.g.
   * {@code TPU_LIBRARY_PATH}), when it is set: it names the real plugin a torch_xla command would load, what
   * {@code xlac run} fronts when given no other. Empty when the device loads no plugin by a variable, or the
   * variable is unset.
   */
  public static Optional<String> torchXlaPluginVariable(Map<String, String> user) {
    String variable = TORCH_XLA_LIBRARY_VARIABLES.get(torchXlaDevice(user));
    String value = variable == null ? null : user.get(variable);
    return value == null || value.isBlank() ? Optional.empty() : Optional.of(variable);
  }

  private static String torchXlaDevice(Map<String, String> user) {
    String device = user.get(TORCH_XLA_DEVICE);
    return device == null || device.isBlank() ? "" : device.strip().toUpperCase(Locale.ROOT);
  }

  /**
   * torch_xla 2.9 loads a device's plugin through the DevicePlugin registered for {@code PJRT_DEVICE}, and its
   * launchers (torch_xla.launch, xmp.spawn, torchrun) ask that registry for the device's topology: the hook
   * answers that plugin's {@code library_path()} with the proxy and leaves the rest of it, and the device type,
   * as they are. TPU, NEURON and XPU also read one variable each when the registry is off
   * (torch_xla/_internal/tpu.py, neuron.py, xpu.py): it names the proxy too. The built-in CPU client loads no
   * plugin, so a command that would use it runs as {@code LIBRARY} (a placeholder of torch_xla's C++ runtime that
   * loads {@code PJRT_LIBRARY_PATH}), for which the hook registers a CPU-like DevicePlugin.
   */
  private static void torchXla(Map<String, String> env, Map<String, String> user, Path proxy, List<String> notes) {
    String device = torchXlaDevice(user);
    String given = user.get(TORCH_XLA_DEVICE);
    if (device.isEmpty() || device.equals("CPU")) {
      if (device.equals("CPU")) {
        notes.add(TORCH_XLA_DEVICE + " is " + given + ", torch_xla's built-in CPU client, which loads no PJRT plugin;"
            + " xlac runs the command with " + TORCH_XLA_DEVICE + "=LIBRARY, a CPU stand-in that compiles through the"
            + " runtime proxy in front of " + env.get(REAL_PLUGIN));
      }
      env.put(TORCH_XLA_DEVICE, "LIBRARY");
      device = "LIBRARY";
    }
    env.put(TORCH_XLA_HOOK_DEVICE, device);
    String variable = TORCH_XLA_LIBRARY_VARIABLES.get(device);
    if (variable == null) {
      return; // CUDA, a third-party plugin: only its registered DevicePlugin names a library
    }
    String own = user.get(variable);
    if (own != null && !own.isBlank() && !sameFile(Path.of(own), Path.of(env.get(REAL_PLUGIN)))) {
      notes.add(variable + " names " + own + ", but xlac serves " + env.get(REAL_PLUGIN) + " (--plugin or $"
          + "XLAC_PJRT_PLUGIN) in its place");
    }
    env.put(variable, proxy.toString());
  }

  private static boolean sameFile(Path a, Path b) {
    try {
      return Files.isSameFile(a, b);
    } catch (IOException | RuntimeException e) {
      return a.toAbsolutePath().normalize().equals(b.toAbsolutePath().normalize());
    }
  }

  private static void putOrRemove(Map<String, String> env, String name, String value) {
    if (value == null) {
      env.remove(name);
    } else {
      env.put(name, value);
    }
  }

  private static String absolute(Path p) {
    return p == null ? null : p.toAbsolutePath().toString();
  }
}
