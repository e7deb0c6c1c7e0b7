package dev.xlac.pipeline;

import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.select.DriverSpec;
import dev.xlac.compiler.select.Drivers;
import java.util.function.Supplier;

/**
 * The driver factory of one run, from its {@link DriverSource}. For a run whose compiles are almost
 * surely needed (PATHs given, or a command to trace) it is made before the cache is opened, with its
 * first worker already starting ({@link Drivers#prestart}): the worker's start-up overlaps opening
 * the cache, reading the PATHs and starting the command, instead of following them.
 *
 * <p>Owns that factory until the run ends. A worker nobody took is killed at {@link #close()}
 * without waiting for its start to finish, and also when the JVM shuts down first (Ctrl-C before
 * any compile began): workers lead process groups of their own, so nothing else would stop it.
 */
final class PreparedDrivers implements AutoCloseable {
  private final Supplier<DriverFactory> open;
  private final DriverFactory prestarted;
  private final Thread hook;

  private PreparedDrivers(Supplier<DriverFactory> open, DriverFactory prestarted) {
    this.open = open;
    this.prestarted = prestarted;
    this.hook = prestarted == null ? null : new Thread(prestarted::close, "xlac-stop-prestarted-worker");
    if (hook != null) {
      Runtime.getRuntime().addShutdownHook(hook);
    }
  }

  /**
   * Resolves and checks the drivers (BAD_INPUT, ENVIRONMENT) and starts the first worker when there
   * is one worth starting early. A given factory is used as it is.
   */
  static PreparedDrivers start(DriverSource source) {
    return switch (source) {
      case DriverSource.FromOptions o -> {
        DriverSpec spec = Drivers.resolve(o.options(), o.env());
        DriverFactory early = Drivers.prestart(spec);
        yield new PreparedDrivers(() -> Drivers.open(spec, early), early);
      }
      case DriverSource.Given g -> new PreparedDrivers(g::factory, null);
    };
  }

  /** Nothing started early: {@link #open()} resolves, checks and opens then. */
  static PreparedDrivers none(DriverSource source) {
    return switch (source) {
      case DriverSource.FromOptions o -> new PreparedDrivers(() -> Drivers.open(Drivers.resolve(o.options(), o.env()),
          null), null);
      case DriverSource.Given g -> new PreparedDrivers(g::factory, null);
    };
  }

  /**
   * The factory, with the checks that need the compiler's identity done ({@link Drivers#open}); the
   * caller closes it (this closes a prestarted one too, which is safe twice).
   */
  DriverFactory open() {
    return open.get();
  }

  @Override
  public void close() {
    if (hook != null) {
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook runs (or ran) and closes it
      }
    }
    if (prestarted != null) {
      prestarted.close();
    }
  }
}
