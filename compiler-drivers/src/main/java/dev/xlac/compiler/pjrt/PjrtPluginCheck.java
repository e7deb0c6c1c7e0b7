package dev.xlac.compiler.pjrt;

import java.nio.file.Path;

/**
 * The check {@code xlac run} makes before it starts a training command behind the runtime proxy:
 * the file is a PJRT plugin for this machine ({@code GetPjrtApi}), of a PJRT C API version xlac
 * supports (major 0, minor {@value PjrtApi#MIN_MINOR} or later), whose table has every function
 * xlac and the proxy call, among them {@code PJRT_Executable_Serialize} (recording) and
 * {@code PJRT_Executable_DeserializeAndLoad} (serving). The plugin is loaded into this JVM but not
 * initialized ({@code PJRT_Plugin_Initialize} is left to the framework that will use it).
 */
public final class PjrtPluginCheck {
  private PjrtPluginCheck() {}

  /**
   * Checks {@code plugin}; an {@link dev.xlac.core.XlacException} with exit code 3 and one line
   * ({@code cannot use PJRT plugin PATH: REASON}) when it is missing, not a loadable library, not a
   * PJRT plugin, of another major version or lacks a function.
   *
   * @return the plugin's PJRT C API version, e.g. {@code 0.115}
   */
  public static String check(Path plugin) {
    return PjrtApi.load(plugin.toAbsolutePath()).versionString();
  }
}
