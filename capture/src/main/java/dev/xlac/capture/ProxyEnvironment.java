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
 *   <li>JAX: {@code PJRT_NAMES_AND_LIBRARY_PATHS=xlac:PROXY} (jax parses {@code name:path} pairs
 *       joined by {@code ,}; a user's own pairs are kept), so the backend is named {@code xlac}
 *       while its devices report the real plugin's platform ({@code cpu}); {@code JAX_PLATFORMS=xlac}
 *       unless the user set {@code JAX_PLATFORMS} (then a note, when it does not name {@code xlac});
 *       {@code JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS=0} and
 *       {@code JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX=.*}, so that the script's path is not in
 *       the program bytes, and hence not in the request key; {@code JAX_COMPILER_DETAILED_LOGGING_MIN_OPS=0}
 *       as {@code xlac dump} sets it, because JAX writes the resulting {@code xla_detailed_logging} into
 *       the compile options.</li>
 *   <li>PyTorch/XLA 2.9: through its device-plugin registry ({@link #torchXla}): {@code XLAC_TORCH_XLA_DEVICE}
 *       and {@code XLAC_TORCH_XLA_PROXY} tell the hook {@code run/_xlac_torch_xla.py} which DevicePlugin's
 *       library is the proxy, so {@code PJRT_DEVICE} (TPU, NEURON, CUDA, ...) is kept and torch_xla's launchers
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

  /** The name the proxy is registered under in JAX, and so JAX's backend name. */
  public static final String JAX_PLUGIN_NAME = "xlac";
  static final String JAX_PLUGINS = "PJRT_NAMES_AND_LIBRARY_PATHS";
  static final String JAX_PLATFORMS = "JAX_PLATFORMS";
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
    // JAX.
    String path = proxy.toString();
    if (path.contains(",") || path.contains(":")) {
      throw XlacException.environment("cannot give JAX the runtime proxy " + path + ": JAX reads "
          + JAX_PLUGINS + " as name:path pairs joined by ',', so the path may contain neither ':' nor ','"
          + " (set XDG_CACHE_HOME to a directory without them)");
    }
    String own = user.get(JAX_PLUGINS);
    String pair = JAX_PLUGIN_NAME + ":" + path;
    env.put(JAX_PLUGINS, own == null || own.isBlank() ? pair : own + "," + pair);
    String platforms = user.get(JAX_PLATFORMS);
    if (platforms == null || platforms.isBlank()) {
      env.put(JAX_PLATFORMS, JAX_PLUGIN_NAME);
    } else if (!List.of(platforms.split(",")).contains(JAX_PLUGIN_NAME)) {
      notes.add(JAX_PLATFORMS + " is " + platforms + ", so JAX will not compile through xlac's runtime proxy"
          + " (unset it, or add " + JAX_PLUGIN_NAME + " to it)");
    }
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
  /** The device type whose registered DevicePlugin the hook {@code run/_xlac_torch_xla.py} fronts. */
  static final String TORCH_XLA_HOOK_DEVICE = "XLAC_TORCH_XLA_DEVICE";
  /** The library that DevicePlugin's {@code library_path()} answers: the proxy. */
  static final String TORCH_XLA_HOOK_PROXY = "XLAC_TORCH_XLA_PROXY";

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
    env.put(TORCH_XLA_HOOK_PROXY, proxy.toString());
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
