package dev.xlac.cli.compile;

import dev.xlac.compiler.schedule.DriverFactory;

/**
 * The driver factory of a run whose compiles are almost surely needed (PATHs given, or a command
 * to trace), made before the cache is opened, with its first worker already starting
 * ({@link DriverSelection#prestart()}): the worker's start-up overlaps opening the cache, reading
 * the PATHs and starting the command, instead of following them.
 *
 * <p>Owns that factory until the run ends. A worker nobody took is killed at {@link #close()}
 * without waiting for its start to finish, and also when the JVM shuts down first (Ctrl-C before
 * any compile began): workers lead process groups of their own, so nothing else would stop it.
 */
final class PrestartedDrivers implements AutoCloseable {
  private final DriverSelection selection;
  private final DriverFactory prestarted;
  private final Thread hook;

  private PrestartedDrivers(DriverSelection selection, DriverFactory prestarted) {
    this.selection = selection;
    this.prestarted = prestarted;
    this.hook = prestarted == null ? null
        : new Thread(prestarted::close, "xlac-stop-prestarted-worker");
    if (hook != null) {
      Runtime.getRuntime().addShutdownHook(hook);
    }
  }

  /** Checks the selection (BAD_INPUT, ENVIRONMENT) and starts its first worker when it has one worth starting early. */
  static PrestartedDrivers start(DriverSelection selection) {
    return new PrestartedDrivers(selection, selection.prestart());
  }

  /** Nothing started early: {@link #open()} is {@code DriverSelection.open(null)}. */
  static PrestartedDrivers none(DriverSelection selection) {
    return new PrestartedDrivers(selection, null);
  }

  /**
   * The factory, checked as {@link DriverSelection#open(DriverFactory)} checks it; the caller closes it (this
   * closes it too, which is safe twice).
   */
  DriverFactory open() {
    return selection.open(prestarted);
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
