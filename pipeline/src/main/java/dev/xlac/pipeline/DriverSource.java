package dev.xlac.pipeline;

import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.select.DriverOptions;
import java.util.Map;

/** Where a run's compiler comes from: the user's options (the CLI), or a factory made by the caller (tests, bench). */
public sealed interface DriverSource permits DriverSource.FromOptions, DriverSource.Given {

  /**
   * Resolved through {@code compiler.select.Drivers} when the run needs it.
   *
   * @param env the environment ({@code $XLAC_PJRT_PLUGIN}, the user's probe directory, neuronx-cc flags)
   */
  record FromOptions(DriverOptions options, Map<String, String> env) implements DriverSource {
    public FromOptions {
      env = Map.copyOf(env);
    }
  }

  /** A factory the run takes over: it is closed when the run ends. */
  record Given(DriverFactory factory) implements DriverSource {}
}
