package dev.xlac.compiler.select;

import dev.xlac.compiler.pjrt.PjrtCompileOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * One compiler, resolved from the options and the environment ({@link Drivers#resolve}): every
 * option is known to belong to this driver and to parse. Whether the compiler is there at all is
 * {@link Drivers#check}'s question.
 */
public sealed interface DriverSpec permits DriverSpec.Pjrt, DriverSpec.NeuronxCc {

  DriverKind kind();

  /** {@code --target}; null for the driver's default. */
  String target();

  /** Per compile; zero for none. */
  Duration timeout();

  /**
   * A PJRT plugin.
   *
   * @param plugin {@code --plugin}, else {@code $XLAC_PJRT_PLUGIN}
   * @param probeDirs where the plugin's identity is remembered: the cache's, then the user's
   */
  record Pjrt(Path plugin, String target, Map<String, String> clientOptions, PjrtCompileOptions compileOptions,
      Duration timeout, List<Path> probeDirs) implements DriverSpec {
    public Pjrt {
      clientOptions = Map.copyOf(clientOptions);
      probeDirs = List.copyOf(probeDirs);
    }

    @Override
    public DriverKind kind() {
      return DriverKind.PJRT;
    }
  }

  /**
   * {@code neuronx-cc}, the first on PATH.
   *
   * @param flags the compiler flags ({@code --compiler-flags}, else from the environment, else the defaults)
   * @param workRoot where each compile gets a directory of its own
   */
  record NeuronxCc(String target, List<String> flags, Duration timeout, Path workRoot) implements DriverSpec {
    public NeuronxCc {
      flags = List.copyOf(flags);
    }

    @Override
    public DriverKind kind() {
      return DriverKind.NEURONX_CC;
    }
  }
}
