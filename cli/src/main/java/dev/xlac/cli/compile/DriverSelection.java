package dev.xlac.cli.compile;

import dev.xlac.compiler.neuron.NeuronxCcDriver;
import dev.xlac.compiler.pjrt.IsolatedPjrtDrivers;
import dev.xlac.compiler.pjrt.PjrtCompileOptions;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.neuron.NeuronxCcIdentity;
import dev.xlac.core.os.Executables;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code --driver NAME} and its options to a {@link DriverFactory}. A new driver is one more case
 * in {@link #open} (its factory makes one {@code CompilerDriver} per worker) and one default in
 * {@link #defaultMemoryPerJob}.
 *
 * @param plugin {@code --plugin}, else {@code $XLAC_PJRT_PLUGIN}; null when neither is given
 * @param target {@code --target}; null for the driver's default
 * @param compilerFlags {@code --compiler-flags}, one string as the user wrote it; null when absent
 * @param timeout per compile; zero for none
 * @param probeDir where drivers may remember what they learnt about a compiler (in the cache directory)
 */
record DriverSelection(String driver, Path plugin, String target, String compilerFlags,
    Map<String, String> clientOptions, Map<String, String> compileOptions, Duration timeout, Path probeDir) {

  static final String PJRT = "pjrt";
  static final String NEURONX_CC = "neuronx-cc";

  /** The expected peak memory of one compile, for the default job count and admission. */
  static long defaultMemoryPerJob(String driver) {
    // neuronx-cc budgets about 64 GB per compile; XLA's CPU/GPU compilers need far less.
    return NEURONX_CC.equals(driver) ? 64L << 30 : 2L << 30;
  }

  /**
   * The checks that need no compiler to run: the options (BAD_INPUT) and whether the plugin file or
   * {@code neuronx-cc} is there at all (ENVIRONMENT). Cheap, so the one-shot mode runs them before
   * it starts the user's command; {@link #open(DriverFactory)} runs them too when nothing was prestarted.
   */
  void check() {
    switch (driver) {
      case PJRT -> {
        if (compilerFlags != null) {
          throw usage("--compiler-flags is for neuronx-cc; a PJRT compile takes --compile-option KEY=VALUE");
        }
        if (plugin == null) {
          throw usage("--driver pjrt needs --plugin PATH (or $XLAC_PJRT_PLUGIN): the PJRT plugin to compile with");
        }
        PjrtCompileOptions.DEFAULT.with(compileOptions); // BAD_INPUT when wrong
        if (!Files.exists(plugin)) {
          throw XlacException.environment("cannot use PJRT plugin " + plugin.toAbsolutePath() + ": no such file");
        }
        if (!Files.isRegularFile(plugin)) {
          throw XlacException.environment("cannot use PJRT plugin " + plugin.toAbsolutePath() + ": not a regular file");
        }
      }
      case NEURONX_CC -> {
        if (!clientOptions.isEmpty() || !compileOptions.isEmpty()) {
          throw usage("--client-option and --compile-option are PJRT options; neuronx-cc takes --compiler-flags");
        }
        if (plugin != null) {
          throw usage("--plugin is for --driver pjrt; neuronx-cc is found on PATH");
        }
        NeuronxCcIdentity.chooseFlags(compilerFlags, System.getenv()); // BAD_INPUT when unparsable
        if (Executables.onPath("neuronx-cc").isEmpty()) { // as NeuronxCcDriver looks it up
          throw XlacException.environment("neuronx-cc was not found on PATH (install the Neuron SDK's neuronx-cc)");
        }
      }
      default -> throw usage("unknown --driver '" + driver + "' (expected " + PJRT + " or " + NEURONX_CC + ")");
    }
  }

  /**
   * The factory for this driver: usage problems are BAD_INPUT, a missing compiler is ENVIRONMENT.
   * May start the compiler once to learn its identity (neuronx-cc; pjrt with {@code --target}).
   * {@code prestarted} is the factory {@link #prestart()} returned (null: none, and then
   * {@link #check()} runs first; a prestarted one has passed it already): the checks that need the
   * compiler's identity run now, and the factory comes back (or is closed on failure).
   */
  DriverFactory open(DriverFactory prestarted) {
    if (prestarted != null) { // a pjrt factory, made after check()
      return checkTarget(prestarted);
    }
    check();
    return PJRT.equals(driver) ? checkTarget(pjrt()) : neuronxCc();
  }

  /**
   * After {@link #check()}: the pjrt factory with its first worker already starting in the
   * background ({@link DriverFactory#prestart()}), so that the worker's start-up overlaps what
   * the caller does next; waits for nothing. Null for neuronx-cc, whose factory runs the compiler
   * when it is made and has no start-up of its own to hide. Give the result to {@link #open(DriverFactory)}.
   */
  DriverFactory prestart() {
    check();
    if (!PJRT.equals(driver)) {
      return null;
    }
    IsolatedPjrtDrivers drivers = pjrt();
    drivers.prestart();
    return drivers;
  }

  private IsolatedPjrtDrivers pjrt() {
    PjrtCompileOptions options = PjrtCompileOptions.DEFAULT.with(compileOptions);
    // The cache's own record first, then the per-user one: a new cache does not re-hash the plugin.
    List<Path> probeDirs = new ArrayList<>(List.of(probeDir));
    IsolatedPjrtDrivers.userProbeDir(System.getenv()).filter(d -> !d.equals(probeDir)).ifPresent(probeDirs::add);
    return new IsolatedPjrtDrivers(plugin, clientOptions, options, timeout, probeDirs);
  }

  private DriverFactory checkTarget(DriverFactory drivers) {
    if (target != null) {
      CompilerIdentity id;
      try {
        id = drivers.identity();
      } catch (RuntimeException e) {
        drivers.close();
        throw e;
      }
      if (!id.target().equals(target.toLowerCase(Locale.ROOT))) {
        drivers.close();
        throw usage("--target " + target + " does not match the PJRT plugin " + plugin + ", which compiles for "
            + id.target());
      }
    }
    return drivers;
  }

  /**
   * neuronx-cc is the first on {@code PATH}, as for Neuron's own tools. Every worker gets its own
   * driver (each asks the compiler for its version again; the scheduler refuses one whose identity
   * differs), and every compile runs in its own directory under the temp directory.
   */
  private DriverFactory neuronxCc() {
    List<String> flags = NeuronxCcIdentity.chooseFlags(compilerFlags, System.getenv());
    Path workRoot = Path.of(System.getProperty("java.io.tmpdir"), "xlac-neuronx-cc");
    CompilerIdentity identity;
    try (NeuronxCcDriver probe = NeuronxCcDriver.open(null, target, flags, timeout, workRoot)) {
      identity = probe.identity();
    }
    return DriverFactory.of(identity, () -> NeuronxCcDriver.open(null, target, flags, timeout, workRoot));
  }

  private static XlacException usage(String message) {
    return new XlacException(ExitCode.BAD_INPUT, message);
  }
}
