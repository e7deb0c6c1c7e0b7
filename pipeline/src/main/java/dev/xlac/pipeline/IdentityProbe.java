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
 * <p>On failure (any Throwable, so that no caller waits for ever) the factory is closed, the failure is kept for
 * {@link #failure()} (as an XlacException), the feed is told (a fixed list waiting for it rethrows what was met),
 * and the given caller thread is interrupted: a traced command is then stopped, since its graphs could not be
 * compiled.
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
      } catch (Throwable e) { // an Error too: a caller waits for this thread's word either way
        if (f != null) {
          try {
            f.close();
          } catch (RuntimeException closing) {
            e.addSuppressed(closing);
          }
        }
        failure = e instanceof XlacException x ? x
            : new XlacException(ExitCode.INTERNAL, "cannot start the compiler: " + XlacException.reason(e), e);
        // A fixed list rethrows what was met, so an unexpected failure reads as before: an internal error.
        feed.failed(e);
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

  /**
   * Waits for the probe to end, whatever interrupts come meanwhile, and returns its failure (null: none). The
   * interrupt a failed probe sent its caller is used up here; any other is kept for the caller to see.
   */
  XlacException awaitEnd() {
    boolean interrupted = false;
    while (true) {
      try {
        thread.join();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (failure != null) {
      Thread.interrupted(); // the probe's own interrupt, if it came
    } else if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return failure;
  }

  /** Why the compiler could not be started; null while it has not failed. */
  XlacException failure() {
    return failure;
  }
}
