package dev.xlac.compiler.select;

import dev.xlac.compiler.neuron.NeuronxCcDriver;
import dev.xlac.compiler.pjrt.IsolatedPjrtDrivers;
import dev.xlac.compiler.pjrt.PjrtCompileOptions;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.neuron.NeuronxCcIdentity;
import dev.xlac.core.os.ProcessBytes;
import dev.xlac.core.os.Executables;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The driver registry: {@link DriverOptions} to a {@link DriverSpec} ({@link #resolve}), the cheap
 * checks ({@link #check}), and the {@link DriverFactory} of a spec ({@link #prestart}, {@link #open}).
 * Usage problems are BAD_INPUT, a missing compiler is ENVIRONMENT. The environment is passed in, so that tests
 * can give their own; the process's own is read only to check that a {@code $XLAC_PJRT_PLUGIN} taken from the
 * map came through decoding unchanged ({@link ProcessBytes#requireFaithfulEnvironment}).
 */
public final class Drivers {
  /** The environment variable that names the PJRT plugin when {@code --plugin} is absent. */
  public static final String PLUGIN_VARIABLE = "XLAC_PJRT_PLUGIN";

  private Drivers() {}

  /**
   * The spec the options ask for, with every option checked to belong to the driver and to parse;
   * does not look at the file system. {@code env} gives {@code $XLAC_PJRT_PLUGIN}, the user's probe
   * directory and neuronx-cc's flags from the environment.
   */
  public static DriverSpec resolve(DriverOptions o, Map<String, String> env) {
    return switch (DriverKind.parse(o.driver())) {
      case PJRT -> pjrt(o, env);
      case NEURONX_CC -> neuronxCc(o, env);
    };
  }

  private static DriverSpec.Pjrt pjrt(DriverOptions o, Map<String, String> env) {
    String fromEnv = env.get(PLUGIN_VARIABLE);
    Path plugin = o.plugin();
    if (plugin == null && fromEnv != null && !fromEnv.isBlank()) {
      ProcessBytes.requireFaithfulEnvironment(PLUGIN_VARIABLE);
      plugin = Path.of(fromEnv);
    }
    if (o.compilerFlags() != null) {
      throw usage("--compiler-flags is for neuronx-cc; a PJRT compile takes --compile-option KEY=VALUE");
    }
    if (plugin == null) {
      throw usage("--driver pjrt needs --plugin PATH (or $XLAC_PJRT_PLUGIN): the PJRT plugin to compile with");
    }
    PjrtCompileOptions options = PjrtCompileOptions.DEFAULT.with(o.compileOptions()); // BAD_INPUT when wrong
    // The cache's own record first, then the per-user one: a new cache does not re-hash the plugin.
    List<Path> probeDirs = new ArrayList<>(List.of(o.probeDir()));
    IsolatedPjrtDrivers.userProbeDir(env).filter(d -> !d.equals(o.probeDir())).ifPresent(probeDirs::add);
    return new DriverSpec.Pjrt(plugin, o.target(), o.clientOptions(), options, o.timeout(), probeDirs);
  }

  private static DriverSpec.NeuronxCc neuronxCc(DriverOptions o, Map<String, String> env) {
    if (!o.clientOptions().isEmpty() || !o.compileOptions().isEmpty()) {
      throw usage("--client-option and --compile-option are PJRT options; neuronx-cc takes --compiler-flags");
    }
    if (o.plugin() != null) {
      throw usage("--plugin is for --driver pjrt; neuronx-cc is found on PATH");
    }
    List<String> flags = NeuronxCcIdentity.chooseFlags(o.compilerFlags(), env); // BAD_INPUT when unparsable
    return new DriverSpec.NeuronxCc(o.target(), flags, o.timeout(),
        Path.of(System.getProperty("java.io.tmpdir"), "xlac-neuronx-cc"));
  }

  /**
   * The checks that need no compiler to run: whether the plugin file or {@code neuronx-cc} is there
   * at all (ENVIRONMENT). Cheap, so the one-shot mode runs them before it starts the user's command.
   */
  public static void check(DriverSpec spec) {
    switch (spec) {
      case DriverSpec.Pjrt p -> {
        if (!Files.exists(p.plugin())) {
          throw XlacException.environment("cannot use PJRT plugin " + p.plugin().toAbsolutePath() + ": no such file");
        }
        if (!Files.isRegularFile(p.plugin())) {
          throw XlacException.environment("cannot use PJRT plugin " + p.plugin().toAbsolutePath()
              + ": not a regular file");
        }
      }
      case DriverSpec.NeuronxCc n -> {
        if (Executables.onPath("neuronx-cc").isEmpty()) { // as NeuronxCcDriver looks it up
          throw XlacException.environment("neuronx-cc was not found on PATH (install the Neuron SDK's neuronx-cc)");
        }
      }
    }
  }

  /**
   * After {@link #check}: the factory with its first worker already starting in the background
   * ({@link DriverFactory#prestart()}), so that the worker's start-up overlaps what the caller does
   * next; waits for nothing. Null for neuronx-cc, whose factory runs the compiler when it is made
   * and has no start-up of its own to hide. Give the result to {@link #open(DriverSpec, DriverFactory)}.
   */
  public static DriverFactory prestart(DriverSpec spec) {
    check(spec);
    return switch (spec) {
      case DriverSpec.Pjrt p -> {
        IsolatedPjrtDrivers drivers = pjrtFactory(p);
        drivers.prestart();
        yield drivers;
      }
      case DriverSpec.NeuronxCc n -> null;
    };
  }

  /**
   * The factory for {@code spec}. May start the compiler once to learn its identity (neuronx-cc;
   * pjrt with a target). {@code prestarted} is what {@link #prestart} returned (null: none, and
   * then {@link #check} runs first): the checks that need the compiler's identity run now, and the
   * factory comes back (or is closed on failure).
   */
  public static DriverFactory open(DriverSpec spec, DriverFactory prestarted) {
    if (prestarted != null) { // a pjrt factory, made after check()
      return checkTarget(spec, prestarted);
    }
    check(spec);
    return switch (spec) {
      case DriverSpec.Pjrt p -> checkTarget(p, pjrtFactory(p));
      case DriverSpec.NeuronxCc n -> neuronxCcFactory(n);
    };
  }

  /**
   * Records {@code identity} as the compiler's of a PJRT {@code spec} where its runs look for it, without loading the
   * plugin: the launcher's class-cache training ({@code CliTraining}) runs {@code parallel-compile} over an empty
   * cache with a stand-in plugin file that must never be loaded. Only in the spec's first probe directory (the
   * cache's own), so that a stand-in's identity never reaches the user's records. neuronx-cc keeps no record:
   * BAD_INPUT.
   */
  public static void remember(DriverSpec spec, CompilerIdentity identity) {
    try (IsolatedPjrtDrivers drivers = firstProbeDirOnly(spec)) {
      drivers.remember(identity);
    }
  }

  /**
   * As {@link #remember(DriverSpec, CompilerIdentity)}, and the plugin identity text of recorded requests for
   * {@code context} ({@code DriverFactory.rememberIdentityText}), in the same directory.
   */
  public static void remember(DriverSpec spec, CompilerIdentity identity, String context, String identityText) {
    try (IsolatedPjrtDrivers drivers = firstProbeDirOnly(spec)) {
      drivers.remember(identity);
      drivers.rememberIdentityText(context, identityText);
    }
  }

  private static IsolatedPjrtDrivers firstProbeDirOnly(DriverSpec spec) {
    if (!(spec instanceof DriverSpec.Pjrt p)) {
      throw usage("only a PJRT plugin's identity is recorded");
    }
    return pjrtFactory(new DriverSpec.Pjrt(p.plugin(), p.target(), p.clientOptions(), p.compileOptions(),
        p.timeout(), p.probeDirs().subList(0, Math.min(1, p.probeDirs().size()))));
  }

  private static IsolatedPjrtDrivers pjrtFactory(DriverSpec.Pjrt p) {
    return new IsolatedPjrtDrivers(p.plugin(), p.clientOptions(), p.compileOptions(), p.timeout(), p.probeDirs());
  }

  /** pjrt only: neuronx-cc takes its target as a flag and reports no platform to check it against. */
  private static DriverFactory checkTarget(DriverSpec spec, DriverFactory drivers) {
    if (spec instanceof DriverSpec.Pjrt p && p.target() != null) {
      CompilerIdentity id;
      try {
        id = drivers.identity();
      } catch (RuntimeException e) {
        drivers.close();
        throw e;
      }
      if (!id.target().equals(p.target().toLowerCase(Locale.ROOT))) {
        drivers.close();
        throw usage("--target " + p.target() + " does not match the PJRT plugin " + p.plugin()
            + ", which compiles for " + id.target());
      }
    }
    return drivers;
  }

  /**
   * Every worker gets its own driver (each asks the compiler for its version again; the scheduler
   * refuses one whose identity differs), and every compile runs in its own directory under the
   * spec's work root.
   */
  private static DriverFactory neuronxCcFactory(DriverSpec.NeuronxCc n) {
    // The driver that learnt the identity is the first worker's, so neuronx-cc --version runs once less.
    NeuronxCcDriver first = NeuronxCcDriver.open(null, n.target(), n.flags(), n.timeout(), n.workRoot());
    return DriverFactory.of(first.identity(),
        () -> NeuronxCcDriver.open(null, n.target(), n.flags(), n.timeout(), n.workRoot()), first);
  }

  private static XlacException usage(String message) {
    return new XlacException(ExitCode.BAD_INPUT, message);
  }
}
