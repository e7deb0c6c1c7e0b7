package dev.xlac.pipeline;

import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.util.function.Supplier;

/**
 * The one thread that gets a run's compiler ready while the run does other things (opens the cache,
 * reads the PATHs, starts the command): it opens the driver factory, learns the compiler's identity
 * (for PJRT without a remembered probe that is a worker JVM and hashing the plugin) and starts the
 * {@link CompileFeed} with it.
 *
 * <p>On failure the factory is closed, the failure is kept for {@link #failure()}, the feed is told
 * (a fixed list waiting for it gets the failure), and the given caller thread is interrupted: a
 * traced command is then stopped, since its graphs could not be compiled.
 */
final class IdentityProbe {
  private final Thread thread;
  private volatile XlacException failure;

  private IdentityProbe(Supplier<DriverFactory> source, CompileFeed feed, Thread interruptOnFailure) {
    thread = Thread.ofPlatform().name("xlac-compiler-probe").unstarted(() -> {
      DriverFactory f = null;
      try {
        f = source.get();
        f.identity();
        feed.start(f);
      } catch (RuntimeException e) {
        if (f != null) {
          f.close();
        }
        failure = e instanceof XlacException x ? x
            : new XlacException(ExitCode.INTERNAL, "cannot start the compiler: " + XlacException.reason(e), e);
        feed.failed(failure);
        if (interruptOnFailure != null) {
          interruptOnFailure.interrupt();
        }
      }
    });
  }

  /**
   * Starts the probe. {@code source} opens the factory (on the probe's thread); {@code interruptOnFailure}
   * is the thread to interrupt when it fails, or null.
   */
  static IdentityProbe start(Supplier<DriverFactory> source, CompileFeed feed, Thread interruptOnFailure) {
    IdentityProbe p = new IdentityProbe(source, feed, interruptOnFailure);
    p.thread.start();
    return p;
  }

  /** Waits for the probe to end (so that no worker starts after the run closed its factory). */
  void join() throws InterruptedException {
    thread.join();
  }

  /** Why the compiler could not be started; null while it has not failed. */
  XlacException failure() {
    return failure;
  }
}
