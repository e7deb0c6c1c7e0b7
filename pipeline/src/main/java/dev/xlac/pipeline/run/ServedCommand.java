package dev.xlac.pipeline.run;

import dev.xlac.capture.ProxyEnvironment;
import dev.xlac.compiler.select.Drivers;
import dev.xlac.core.XlacException;
import dev.xlac.core.os.ProcessBytes;
import dev.xlac.runtime.PreloadList;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What {@code xlac run}'s command is given, decided the same way by the run ({@link RuntimeRun}) and by the launch
 * plan it writes for the next one ({@link FastStart}): the real plugin it would load, and the list of executables to
 * load ahead in its environment.
 */
final class ServedCommand {
  private ServedCommand() {}

  /**
   * {@code --plugin}, else {@code $XLAC_PJRT_PLUGIN}, else the plugin torch_xla's {@code PJRT_DEVICE} would load
   * ({@code TPU_LIBRARY_PATH} for {@code PJRT_DEVICE=TPU}, ...: {@link ProxyEnvironment#torchXlaPluginVariable}); none
   * is a usage error.
   */
  static Path pluginPath(Path option, java.util.Map<String, String> env) {
    if (option != null) {
      return option;
    }
    String fromEnv = env.get(Drivers.PLUGIN_VARIABLE);
    if (fromEnv == null || fromEnv.isBlank()) {
      Optional<String> torchXla = ProxyEnvironment.torchXlaPluginVariable(env);
      if (torchXla.isPresent()) {
        ProcessBytes.requireFaithfulEnvironment(torchXla.get());
        return Path.of(env.get(torchXla.get()));
      }
      throw XlacException.badInput("no PJRT plugin given: use --plugin PATH or set $" + Drivers.PLUGIN_VARIABLE
          + " (the real plugin the command would load)");
    }
    ProcessBytes.requireFaithfulEnvironment(Drivers.PLUGIN_VARIABLE);
    return Path.of(fromEnv);
  }

  /**
   * The command's environment with {@link PreloadList#VARIABLE} naming the list of what the previous run of this
   * command asked for, in the cache's own layout ({@code layout} null: a {@code --layout}, which xlac does not write:
   * none). Stable per command, as the launch plan carries it.
   */
  static Map<String, String> withPreload(Map<String, String> variables, Path layout, List<String> command) {
    Map<String, String> env = new HashMap<>(variables);
    env.remove(PreloadList.VARIABLE);
    if (layout != null) {
      env.put(PreloadList.VARIABLE, preloadList(layout, command).toString());
    }
    return Map.copyOf(env);
  }

  static Path preloadList(Path layout, List<String> command) {
    return PreloadList.file(layout.toAbsolutePath(), Path.of(System.getProperty("user.dir")), command);
  }
}
