package dev.xlac.compiler.select;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * The compiler options as the user gave them, not yet checked: {@link Drivers#resolve} turns them
 * into a {@link DriverSpec}.
 *
 * @param driver {@code --driver}, e.g. {@code pjrt}
 * @param plugin {@code --plugin}; null when absent (then {@code $XLAC_PJRT_PLUGIN} is used for pjrt)
 * @param target {@code --target}; null for the driver's default
 * @param compilerFlags {@code --compiler-flags}, one string as the user wrote it; null when absent
 * @param timeout per compile; zero for none
 * @param probeDir where drivers may remember what they learnt about a compiler (in the cache directory)
 */
public record DriverOptions(String driver, Path plugin, String target, String compilerFlags,
    Map<String, String> clientOptions, Map<String, String> compileOptions, Duration timeout, Path probeDir) {
  public DriverOptions {
    clientOptions = Map.copyOf(clientOptions);
    compileOptions = Map.copyOf(compileOptions);
  }
}
